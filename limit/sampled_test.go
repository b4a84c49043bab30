package limit_test

import (
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// Fed one completion in 8, each of Weight 8, Auto sets the same limits as
// fed every completion: the delivery bound takes the rate from the
// weights and the RTT from the samples. The loads are fast enough for a
// sample of 8 to hold the rounds' 10 samples in a window, as the
// admission Controller's sampling does: a downstream cap of 32 that
// appears and disappears at 2560/s, and a handler 4x slower and fast again
// at 4000/s (200 and 800 in flight).
func TestAutoSampledSameLimits(t *testing.T) {
	rate := 4 * capped.capacity()
	slow := ioBound
	slow.wait = 4 * ioBound.wait
	for _, tc := range []struct {
		name   string
		phases []phase
	}{
		{"downstream cap", []phase{
			{"uncapped", ioBound, rate, served(ioBound, rate, 0.95)},
			{"capped", capped, rate, within(32, 64)},
			{"uncapped", ioBound, rate, served(ioBound, rate, 0.95)},
			{"capped", capped, rate, within(32, 64)},
		}},
		{"slower handler", []phase{
			{"fast", ioBound, 4000, served(ioBound, 4000, 0.95)},
			{"4x slower", slow, 4000, served(slow, 4000, 0.95)},
			{"fast", ioBound, 4000, served(ioBound, 4000, 0.95)},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var limits [2][]int
			for i, k := range []int{1, 8} {
				synctest.Test(t, func(t *testing.T) {
					a := newAuto(t, limit.AutoOptions{})
					followShifts(t, time.Second, func(s service, rate float64) []int {
						l := runSampled(t, a, s, constant(rate), 5*time.Second, k)
						limits[i] = append(limits[i], l...)
						return l
					}, tc.phases...)
				})
			}
			// The sampled mean RTT differs from the full one by a hair,
			// which can move the knee's ceiling by one.
			if !slices.EqualFunc(limits[0], limits[1], func(x, y int) bool { return abs(x-y) <= max(1, x/50) }) {
				t.Errorf("limits fed every completion:\n%v\nfed one in 8 of weight 8:\n%v", limits[0], limits[1])
			}
		})
	}
}

func abs(x int) int { return max(x, -x) }
