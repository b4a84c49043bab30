package cli

import (
	"math"
	"slices"
)

// sustainedQuantile is the quantile of recent closed-loop windows taken as
// the workers' capacity. On a machine that does anything else, what the
// workers render moves from one half-second to the next (other processes
// take a core now and then); an open-loop load at the mean of those
// windows outruns them about half the time, and any admission control
// that bounds queueing sheds the excess, as it should. The rate reached
// in three windows of four is one they sustain.
const sustainedQuantile = 0.25

// capacityWindows keeps the rates of the last closed-loop windows and
// estimates from them the capacity the workers sustain. Measured anew
// before each step of the ramp, it follows what else the machine runs
// without being swayed by one window.
//
// The zero value keeps no window: use newCapacityWindows. Not safe for
// concurrent use.
type capacityWindows struct {
	keep  int
	rates []float64 // oldest first
}

// newCapacityWindows returns an estimate over the last keep windows.
func newCapacityWindows(keep int) *capacityWindows {
	return &capacityWindows{keep: max(keep, 1)}
}

// add records one window's rate, forgetting the oldest beyond keep.
func (c *capacityWindows) add(rate float64) {
	c.rates = append(c.rates, rate)
	if n := len(c.rates); n > c.keep {
		c.rates = slices.Delete(c.rates, 0, n-c.keep)
	}
}

// sustained returns the capacity estimate: the sustainedQuantile of the
// kept windows' rates, interpolated between the two nearest; 0 with none.
func (c *capacityWindows) sustained() float64 { return quantile(c.rates, sustainedQuantile) }

// span returns the lowest and highest rate kept.
func (c *capacityWindows) span() (lo, hi float64) {
	if len(c.rates) == 0 {
		return 0, 0
	}
	return slices.Min(c.rates), slices.Max(c.rates)
}

// quantile returns the q-quantile of xs (0 <= q <= 1), interpolated
// linearly between the two nearest ranks; 0 for no xs. xs is not changed.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}
