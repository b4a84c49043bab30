package cli

import (
	"math"
	"testing"
)

func TestQuantile(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.25, 0},
		{[]float64{150}, 0.25, 150},
		{[]float64{200, 100, 150, 175, 125}, 0, 100},
		{[]float64{200, 100, 150, 175, 125}, 0.25, 125},
		{[]float64{200, 100, 150, 175, 125}, 0.5, 150},
		{[]float64{200, 100, 150, 175, 125}, 1, 200},
		{[]float64{100, 200}, 0.25, 125}, // between the two nearest ranks
	} {
		if got := quantile(tt.xs, tt.q); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("quantile(%v, %g) = %g, want %g", tt.xs, tt.q, got, tt.want)
		}
	}
}

// One window slowed by another process does not set the capacity, and the
// estimate is what the workers reached in three windows of four, not their
// mean, which an open-loop load would outrun half the time.
func TestCapacityWindowsSustained(t *testing.T) {
	c := newCapacityWindows(8)
	for _, r := range []float64{180, 176, 60, 184, 178, 182, 170, 186} {
		c.add(r)
	}
	if got, want := c.sustained(), 174.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("sustained = %g, want %g (the lower quartile, unmoved by the 60)", got, want)
	}
	if lo, hi := c.span(); lo != 60 || hi != 186 {
		t.Errorf("span = %g-%g, want 60-186", lo, hi)
	}
}

// The estimate follows the machine: windows older than the last keep are
// forgotten, so a capacity that fell (another process took a core) is the
// capacity within keep windows.
func TestCapacityWindowsForget(t *testing.T) {
	c := newCapacityWindows(4)
	for _, r := range []float64{180, 180, 180, 180, 100, 100, 100, 100} {
		c.add(r)
	}
	if got := c.sustained(); got != 100 {
		t.Errorf("sustained = %g after four windows at 100, want 100", got)
	}
	if lo, hi := c.span(); lo != 100 || hi != 100 {
		t.Errorf("span = %g-%g, want 100-100 (the 180s forgotten)", lo, hi)
	}
	if got := newCapacityWindows(4).sustained(); got != 0 {
		t.Errorf("sustained with no window = %g, want 0", got)
	}
}
