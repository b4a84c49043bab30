package proxy

import "testing"

func TestDefaultBuffered(t *testing.T) {
	tests := []struct {
		mem, want int64
	}{
		{0, 256 << 20},        // unknown: four times the floor
		{256 << 20, 64 << 20}, // a small container: the floor
		{2 << 30, 256 << 20},  // an eighth
		{64 << 30, 1 << 30},   // a big machine: the ceiling
	}
	for _, tt := range tests {
		if got := defaultBuffered(tt.mem); got != tt.want {
			t.Errorf("defaultBuffered(%d): got %d, want %d", tt.mem, got, tt.want)
		}
	}
	if got := DefaultMaxBufferedBytes(); got < minDefaultBuffered || got > maxDefaultBuffered {
		t.Errorf("DefaultMaxBufferedBytes on this machine: got %d, want within [%d, %d]", got, minDefaultBuffered, maxDefaultBuffered)
	}
}

func TestBudget(t *testing.T) {
	b := budget{max: 10}
	if !b.reserve(6) || b.reserve(5) || !b.reserve(4) {
		t.Fatal("reserve: want 6 and 4 to fit in 10, 5 after 6 not")
	}
	b.force(3)
	if got := b.used.Load(); got != 13 {
		t.Errorf("after force: got %d used, want 13", got)
	}
	b.release(13)
	if got, peak := b.used.Load(), b.peak.Load(); got != 0 || peak != 13 {
		t.Errorf("after release: got %d used, peak %d; want 0 and 13", got, peak)
	}
}
