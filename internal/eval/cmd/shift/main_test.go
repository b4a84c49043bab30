package main

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

func series(goodput ...float64) []loadgen.Point {
	s := make([]loadgen.Point, len(goodput))
	for i, g := range goodput {
		s[i] = loadgen.Point{Start: time.Duration(i) * 250 * time.Millisecond, Goodput: g}
	}
	return s
}

// Recovery is the first point from which every one-second mean to the end
// stays at the threshold: a dip after an early good second is no recovery.
func TestRecoveredAfter(t *testing.T) {
	goodput := func(p loadgen.Point) float64 { return p.Goodput }
	for _, tc := range []struct {
		name   string
		series []loadgen.Point
		at     time.Duration
		ok     bool
	}{
		{"at once", series(10, 10, 10, 10, 10, 10), 0, true},
		{"after half a second", series(0, 0, 10, 10, 10, 10, 10, 10), 500 * time.Millisecond, true},
		{"a dip later", series(10, 10, 10, 10, 0, 0, 10, 10, 10, 10), 1500 * time.Millisecond, true},
		{"never", series(10, 10, 10, 10, 10, 0), 0, false},
		{"shorter than a second", series(10, 10), 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			at, ok := recoveredAfter(tc.series, 250*time.Millisecond, goodput, 8)
			if at != tc.at || ok != tc.ok {
				t.Errorf("got %v, %v; want %v, %v", at, ok, tc.at, tc.ok)
			}
		})
	}
}
