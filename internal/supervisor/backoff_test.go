package supervisor

import (
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	ms := time.Millisecond
	b := backoff{min: 100 * ms, max: 30 * time.Second, jitter: 0.2}
	tests := []struct {
		failures int
		r        float64
		want     time.Duration
	}{
		{0, 0, 100 * ms},
		{1, 0, 200 * ms},
		{2, 0, 400 * ms},
		{8, 0, 25600 * ms},
		{9, 0, 30 * time.Second}, // capped
		{1000, 0, 30 * time.Second},
		{0, 0.5, 90 * ms},
		{9, 0.5, 27 * time.Second},
		{3, 1, 640 * ms}, // the lower bound, (1-jitter) x 800ms
	}
	for _, tt := range tests {
		if got := b.delay(tt.failures, tt.r); got != tt.want {
			t.Errorf("delay(%d, %v): got %v, want %v", tt.failures, tt.r, got, tt.want)
		}
	}
}

func TestBackoffDelayStaysInBounds(t *testing.T) {
	b := backoff{min: 100 * time.Millisecond, max: 30 * time.Second, jitter: 0.2}
	for failures := range 20 {
		base := min(100*time.Millisecond<<failures, 30*time.Second)
		for _, r := range []float64{0, 0.1, 0.5, 0.9, 0.999999} {
			got := b.delay(failures, r)
			if lo := base - base/5; got < lo || got > base {
				t.Fatalf("delay(%d, %v): got %v, want within [%v, %v]", failures, r, got, lo, base)
			}
		}
	}
}

func TestCrashGuard(t *testing.T) {
	t0 := time.Unix(1000, 0)
	s := time.Second
	tests := []struct {
		name  string
		max   int
		exits []time.Duration // offsets from t0
		want  []bool          // record's answer after each exit
	}{
		{"trips on the exit after max", 3, []time.Duration{0, s, 2 * s, 3 * s}, []bool{false, false, false, true}},
		{"old exits leave the window", 3, []time.Duration{0, 20 * s, 40 * s, 60 * s, 80 * s}, []bool{false, false, false, false, false}},
		{"exactly window apart is outside", 1, []time.Duration{0, 60 * s}, []bool{false, false}},
		{"just inside the window", 1, []time.Duration{0, 59 * s}, []bool{false, true}},
		{"disabled", -1, []time.Duration{0, 0, 0, 0}, []bool{false, false, false, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := crashGuard{max: tt.max, window: 60 * s}
			for i, off := range tt.exits {
				if got := g.record(t0.Add(off)); got != tt.want[i] {
					t.Fatalf("record at +%v: got %v, want %v", off, got, tt.want[i])
				}
			}
			g.reset()
			if got := g.record(t0.Add(tt.exits[len(tt.exits)-1])); got != (tt.max == 0) {
				t.Errorf("after reset: got %v, want %v", got, tt.max == 0)
			}
		})
	}
}
