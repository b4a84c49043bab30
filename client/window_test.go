package client

import (
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func TestWindow(t *testing.T) {
	type add struct {
		at          time.Duration
		total, hits int64
	}
	tests := []struct {
		name                string
		adds                []add
		at                  time.Duration
		wantTotal, wantHits int64
	}{
		{"empty", nil, 0, 0, 0},
		{"one bucket", []add{{0, 1, 0}, {time.Second / 2, 1, 1}}, time.Second, 2, 1},
		{"across buckets", []add{{0, 1, 1}, {3 * time.Second, 2, 0}, {9 * time.Second, 4, 4}}, 9 * time.Second, 7, 5},
		{"oldest bucket leaves", []add{{0, 1, 1}, {5 * time.Second, 2, 0}}, 10 * time.Second, 2, 0},
		{"still inside before its bucket leaves", []add{{0, 1, 1}, {5 * time.Second, 2, 0}}, 10*time.Second - 1, 3, 1},
		{"all gone after a period", []add{{0, 1, 1}, {9 * time.Second, 2, 2}}, 20 * time.Second, 0, 0},
		{"reused slot is reset", []add{{0, 5, 5}, {10 * time.Second, 1, 0}}, 10 * time.Second, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWindow(10*time.Second, 10)
			for _, a := range tt.adds {
				w.add(at(a.at), a.total, a.hits)
			}
			total, hits := w.sum(at(tt.at))
			if total != tt.wantTotal || hits != tt.wantHits {
				t.Errorf("sum = (%d, %d), want (%d, %d)", total, hits, tt.wantTotal, tt.wantHits)
			}
		})
	}
}

func TestWindowReset(t *testing.T) {
	w := newWindow(time.Second, 4)
	w.add(at(0), 3, 2)
	w.reset()
	if total, hits := w.sum(at(0)); total != 0 || hits != 0 {
		t.Errorf("after reset sum = (%d, %d), want (0, 0)", total, hits)
	}
	if got, want := w.period(), time.Second; got != want {
		t.Errorf("period = %v, want %v", got, want)
	}
}
