package limit_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// A phase of a shift: a service under a constant offered rate, and what
// counts as the limit having followed it.
type phase struct {
	name string
	s    service
	rate float64
	ok   func(l int) bool
}

// served is ok while the modelled goodput at l is at least min.
func served(s service, rate, min float64) func(int) bool {
	return func(l int) bool { return goodput(s, l, rate) >= min }
}

// within is ok while l is in [lo, hi].
func within(lo, hi int) func(int) bool {
	return func(l int) bool { return l >= lo && l <= hi }
}

// followShifts runs the phases back to back with run, with no pause,
// and fails unless after each shift the limit is ok within the deadline
// and stays ok to the end of the phase.
func followShifts(t *testing.T, deadline time.Duration, run func(s service, rate float64) []int, phases ...phase) {
	t.Helper()
	for i, p := range phases {
		limits := run(p.s, p.rate)
		if i == 0 {
			continue // the cold start has its own tests
		}
		recovered := len(limits)
		for j := len(limits) - 1; j >= 0 && p.ok(limits[j]); j-- {
			recovered = j
		}
		took := time.Duration(recovered+1) * limit.AutoWindow
		t.Logf("%s -> %s: followed after %v", phases[i-1].name, p.name, took)
		if took > deadline {
			t.Errorf("%s -> %s: the limit followed after %v, want within %v (limits %v)", phases[i-1].name, p.name, took, deadline, limits)
		}
	}
}

// The workload shifts both ways, with no pause: CPU-bound handlers at 4x
// their capacity, then I/O-bound ones at 400/s (20 in flight), and back.
// Each time the limit follows within 400 ms (an I/O-bound phase of 8 s
// that must serve 95% has 0.4 s to lose): down to the CPUs (2, or one
// above while it probes), up to serving every I/O-bound request. The CPU
// phase would leave records (10 ms RTT, 200/s) that, paired with the I/O
// phase's RTT, put the knee at 2, where a bound that nothing verifies
// stays.
func TestAutoFollowsCPUAndIO(t *testing.T) {
	cpu := phase{"CPU-bound", cpuBound, 4 * cpuBound.capacity(), within(2, 3)}
	io := phase{"I/O-bound", ioBound, 400, served(ioBound, 400, 0.95)}
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		followShifts(t, 400*time.Millisecond, func(s service, rate float64) []int {
			return run(t, a, s, constant(rate), 8*time.Second)
		}, cpu, io, cpu, io)
	})
	for seed := range uint64(3) {
		synctest.Test(t, func(t *testing.T) {
			a := newAuto(t, limit.AutoOptions{})
			n := newNoise(seed)
			n.Bursts = 0 // a burst trims the limit for a window; the quiet run checks that it stays
			followShifts(t, 400*time.Millisecond, func(s service, rate float64) []int {
				return runNoisy(t, a, s, constant(rate), 8*time.Second, n)
			}, cpu, io, cpu, io)
		})
	}
}

// A downstream whose cap of 32 appears and disappears under 4x the
// capped capacity (2560/s, 128 in flight uncapped): the limit comes down
// to the cap's knee (32 to 64) within a second, although the best rate
// recorded is the uncapped one, and goes back up to serve everything
// within a second once the cap is gone.
func TestAutoFollowsDownstreamCap(t *testing.T) {
	rate := 4 * capped.capacity()
	free := phase{"uncapped", ioBound, rate, served(ioBound, rate, 0.95)}
	limited := phase{"capped", capped, rate, within(32, 64)}
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		followShifts(t, time.Second, func(s service, rate float64) []int {
			return run(t, a, s, constant(rate), 5*time.Second)
		}, free, limited, free, limited)
	})
}

// A handler that gets 4x slower (50 ms to 200 ms waiting, 80 in flight at
// 400/s), then fast again: served in full within a second of each
// change, not held at the fast handler's knee.
func TestAutoFollowsSlowerHandler(t *testing.T) {
	slow := ioBound
	slow.wait = 4 * ioBound.wait
	fast := phase{"fast", ioBound, 400, served(ioBound, 400, 0.95)}
	slower := phase{"4x slower", slow, 400, served(slow, 400, 0.95)}
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		followShifts(t, time.Second, func(s service, rate float64) []int {
			return run(t, a, s, constant(rate), 5*time.Second)
		}, fast, slower, fast, slower)
	})
	// The same with CPU-bound handlers (10 ms to 40 ms of CPU at 4x the
	// fast capacity): the limit stays at the CPUs throughout.
	slowCPU := cpuBound
	slowCPU.cpu = 4 * cpuBound.cpu
	rate := 4 * cpuBound.capacity()
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		followShifts(t, 100*time.Millisecond, func(s service, rate float64) []int {
			return run(t, a, s, constant(rate), 5*time.Second)
		}, phase{"fast CPU", cpuBound, rate, within(2, 3)}, phase{"4x slower CPU", slowCPU, rate, within(2, 3)},
			phase{"fast CPU", cpuBound, rate, within(2, 3)})
	})
}
