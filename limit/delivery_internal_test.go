package limit

import (
	"testing"
	"time"
)

// A knee below the floor: records of a fast, light phase (10 ms at 90/s:
// a knee of 1) and then a 50 ms service held at the floor of 2. The cut to
// 1 cannot lower the limit, so nothing can verify it; the bound relearns
// instead of cutting to 1 again every round, which would hold the limit
// at the floor for ever.
func TestDeliveryBoundCutBelowTheFloor(t *testing.T) {
	d := newDeliveryBound(1.5, 1000)
	now := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	window := func(n int, rtt time.Duration, binding bool) int {
		now = now.Add(AutoWindow)
		for range n {
			d.observe(Sample{RTT: rtt})
		}
		return d.tick(now, 2, binding, false)
	}
	for range 20 { // app-limited: recorded, not acted on
		window(9, 10*time.Millisecond, false)
	}
	var bounds []int
	for range 20 {
		bounds = append(bounds, window(10, 50*time.Millisecond, true))
	}
	if last := bounds[len(bounds)-1]; last < 4 {
		t.Errorf("bound %d after 2 s at the floor of a 50 ms service, want >= 4, relearnt (bounds %v)", last, bounds)
	}
}
