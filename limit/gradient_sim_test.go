package limit_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/sluicehq/sluice/limit"
)

// These tests drive a Gradient with windows from cpuModel. With the default
// Tolerance of 1.5 the rule settles where RTT = 1.5 x no-load RTT, i.e. at
// 1.5 c for c cores, and square-root growth overshoots that by sqrt(L)
// before the gradient pulls it back: the band [c, 1.5c + sqrt(1.5c) + 1].

const overload = 1 << 20 // offered concurrency: clients queue without end

func knee(c float64) (lo, hi int) {
	return int(c), int(1.5*c + math.Sqrt(1.5*c) + 1)
}

// settle returns the index of the first window from which on every limit
// lies in [lo, hi], or -1.
func settle(ls []int, lo, hi int) int {
	first := -1
	for i, l := range ls {
		switch {
		case l < lo || l > hi:
			first = -1
		case first < 0:
			first = i
		}
	}
	return first
}

func newGradient(t *testing.T, o limit.GradientOptions) *limit.Gradient {
	t.Helper()
	g, err := limit.NewGradient(o)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGradientConvergesToTheKnee(t *testing.T) {
	for _, initial := range []int{1, 100, 1000} {
		for _, cores := range []float64{4, 32, 200} {
			t.Run(fmt.Sprintf("start %d, %v cores", initial, cores), func(t *testing.T) {
				g := newGradient(t, limit.GradientOptions{Initial: initial})
				ls := newSim(g, cpuModel{Cores: cores, Service: 10 * ms}, overload).run(500)
				lo, hi := knee(cores)
				if at := settle(ls, lo, hi); at < 0 || at > 40 {
					t.Errorf("settled in [%d, %d] at window %d, want by window 40; limits %v", lo, hi, at, ls[:60])
				}
			})
		}
	}
}

// TestGradientBoundedUnderSteadyOverload is Netflix issue #134: under
// steady overload Gradient2's long-run RTT drifts up to the overloaded RTT,
// the gradient tends to 1 and the limit grows for ever. The reference
// implementation shows the model reproduces it; Gradient must not.
func TestGradientBoundedUnderSteadyOverload(t *testing.T) {
	const cores, windows = 32, 5000
	lo, hi := knee(cores)
	model := cpuModel{Cores: cores, Service: 10 * ms}

	ref := newSim(&gradient2{limit: 20}, model, overload).run(windows)
	if last := ref[windows-1]; last <= 3*hi {
		t.Fatalf("reference Gradient2 ended at %d, want it to run away (> %d): the model no longer shows #134", last, 3*hi)
	}

	g := newGradient(t, limit.GradientOptions{})
	ls := newSim(g, model, overload).run(windows)
	if at := settle(ls, lo, hi); at < 0 || at > 40 {
		t.Errorf("settled in [%d, %d] at window %d of %d, want by window 40", lo, hi, at, windows)
	}
	if b, trusted := g.Baseline(); b != model.Service || !trusted {
		t.Errorf("after %d windows of overload: Baseline() = %v, %v; want %v, true", windows, b, trusted, model.Service)
	}
}

// TestGradientCapacityLoss halves the service's capacity once the limit has
// settled. A gradient with a fixed baseline would see RTT above tolerance
// at every limit and shrink to Min (the no-load RTT itself doubled); one
// whose baseline drifts would never settle. Gradient must re-converge into
// the new band within a bounded number of windows, without collapsing.
func TestGradientCapacityLoss(t *testing.T) {
	tests := []struct {
		name  string
		cores float64
		lose  func(*cpuModel)
		after float64 // cores after the loss (the knee in concurrency)
		hi    int     // top of the band after the loss; 0 means knee's
	}{
		// Each request needs twice the CPU: the knee stays at c cores but
		// the no-load RTT doubles. The baseline rises to 2s/1.5, so the
		// rule settles at the knee itself: [c, c + sqrt(c) + 1].
		{"slower requests, 32 cores", 32, func(m *cpuModel) { m.Service *= 2 }, 32, 32 + 7},
		{"slower requests, 200 cores", 200, func(m *cpuModel) { m.Service *= 2 }, 200, 200 + 15},
		// Half the cores: no-load RTT unchanged, the knee halves.
		{"half the cores, 32", 32, func(m *cpuModel) { m.Cores /= 2 }, 16, 0},
		{"half the cores, 200", 200, func(m *cpuModel) { m.Cores /= 2 }, 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGradient(t, limit.GradientOptions{})
			s := newSim(g, cpuModel{Cores: tt.cores, Service: 10 * ms}, overload)
			s.run(100)
			tt.lose(&s.model)
			ls := s.run(500)
			lo, hi := knee(tt.after)
			if tt.hi != 0 {
				hi = tt.hi
			}
			if at := settle(ls, lo, hi); at < 0 || at > 15 {
				t.Errorf("settled in [%d, %d] at window %d after the loss, want by window 15; limits %v", lo, hi, at, ls[:30])
			}
			if m := minOf(ls); m < lo/2 {
				t.Errorf("limit fell to %d after the loss, want >= %d (no collapse)", m, lo/2)
			}
		})
	}
}

func minOf(ls []int) int {
	m := ls[0]
	for _, l := range ls {
		m = min(m, l)
	}
	return m
}

// TestGradientDropsShrink sends drops (timeouts) in every window once the
// limit has settled: each window cuts it by a tenth, however many drops.
func TestGradientDropsShrink(t *testing.T) {
	g := newGradient(t, limit.GradientOptions{})
	s := newSim(g, cpuModel{Cores: 200, Service: 10 * ms}, overload)
	s.run(100)
	s.Drops = 25
	prev := g.Limit()
	for i := range 5 {
		got := s.window()
		if want := 0.9 * float64(prev); math.Abs(float64(got)-want) > 1 {
			t.Errorf("window %d with %d drops: limit %d -> %d, want about %.1f", i, s.Drops, prev, got, want)
		}
		prev = got
	}
}

// TestGradientAppLimitedHolds lets the load fall below half the limit for
// a long time: Gradient2 without its hold would grow the limit into the
// unused space; Gradient must neither grow nor shrink, and be back in the
// band at once when the load returns.
func TestGradientAppLimitedHolds(t *testing.T) {
	const cores = 32
	g := newGradient(t, limit.GradientOptions{})
	s := newSim(g, cpuModel{Cores: cores, Service: 10 * ms}, overload)
	s.run(100)
	before := g.Limit()
	s.Offered = before/2 - 1
	for i, l := range s.run(1000) {
		if l != before {
			t.Fatalf("app-limited window %d: limit %d, want %d (hold)", i, l, before)
		}
	}
	s.Offered = overload
	lo, hi := knee(cores)
	if at := settle(s.run(100), lo, hi); at != 0 {
		t.Errorf("after the load returned: settled in [%d, %d] at window %d, want 0", lo, hi, at)
	}
}

// TestGradientNoisyRTT adds per-sample noise: a noisy mean must neither
// ratchet the baseline up (the limit would climb, as in #134) nor drag it
// down (the limit would collapse). The band is wider than the noiseless
// one: the baseline is the lowest of many noisy means, a little low.
func TestGradientNoisyRTT(t *testing.T) {
	tests := []struct {
		name    string
		noise   func(*rand.Rand) float64
		samples int
	}{
		{"uniform +-60%, 50 samples a window", uniform(0.6), 50},
		{"exponential, 500 samples a window", exponential, 500},
	}
	for _, tt := range tests {
		for _, cores := range []float64{4, 32, 200} {
			t.Run(fmt.Sprintf("%s, %v cores", tt.name, cores), func(t *testing.T) {
				g := newGradient(t, limit.GradientOptions{})
				s := newSim(g, cpuModel{Cores: cores, Service: 10 * ms}, overload)
				s.Noise, s.Samples = tt.noise, tt.samples
				s.run(200)
				ls := s.run(3000)
				lo, hi := knee(cores)
				lo, hi = int(0.75*float64(lo)), int(1.25*float64(hi))
				if got := minOf(ls); got < lo {
					t.Errorf("limit fell to %d, want >= %d", got, lo)
				}
				if got := -minOf(negate(ls)); got > hi {
					t.Errorf("limit rose to %d, want <= %d", got, hi)
				}
			})
		}
	}
}

func negate(ls []int) []int {
	n := make([]int, len(ls))
	for i, l := range ls {
		n[i] = -l
	}
	return n
}

// TestGradientNoisyCapacityLoss is TestGradientCapacityLoss with noise:
// inconclusive evidence must not let the limit shrink to Min.
func TestGradientNoisyCapacityLoss(t *testing.T) {
	const cores = 32
	g := newGradient(t, limit.GradientOptions{})
	s := newSim(g, cpuModel{Cores: cores, Service: 10 * ms}, overload)
	s.Noise = uniform(0.6)
	s.run(200)
	s.model.Service *= 2
	ls := s.run(300)
	if got := minOf(ls); got < cores/4 {
		t.Errorf("limit fell to %d after the loss, want >= %d", got, cores/4)
	}
	if got := ls[len(ls)-1]; got < int(0.75*cores) || got > 2*cores {
		t.Errorf("limit %d 300 windows after the loss, want in [%d, %d]", got, int(0.75*cores), 2*cores)
	}
}
