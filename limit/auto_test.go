package limit_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// service is a model of a Go service on 2 CPUs: what one 100 ms window
// shows at a given limit and offered rate.
type service struct {
	cpus float64
	cpu  time.Duration // CPU per request
	wait time.Duration // off-CPU wait per request (a downstream)
	cap  int           // the downstream's concurrency cap; 0: none
}

// window observes the service for one window at limit l under rate
// requests per second (open loop): the Window, and the RTT of a request.
func (s service) window(l int, rate float64) (limit.Window, time.Duration) {
	// Unlimited, rate x RTT requests would be in flight; the limit caps
	// that. Solve for the in-flight count m by iterating: RTT depends on m.
	m := float64(l)
	var rtt time.Duration
	for range 50 {
		rtt = s.rtt(m)
		m = math.Min(float64(l), rate*rtt.Seconds())
	}
	rtt, onCPU := s.rtt(m), s.onCPU(m)
	w := limit.Window{
		Inflight:     int(math.Round(m)),
		PeakInflight: int(math.Round(m)),
		MeanInflight: m,
		Runnable:     math.Max(0, onCPU-s.cpus),
		CPUBusy:      math.Min(1, onCPU/s.cpus),
		CPUs:         s.cpus,
		Saturation:   math.NaN(),
	}
	if rate*rtt.Seconds() > float64(l)+0.5 {
		w.PeakInflight, w.Queued = l, 10 // the limit binds: requests wait
	}
	return w, rtt
}

// rtt is a request's time in the service at m in flight: its CPU time
// stretched by time-slicing once more want CPU than there are CPUs, plus
// the wait, stretched once more wait than the downstream's cap.
func (s service) rtt(m float64) time.Duration {
	cpu, wait := s.phases(m)
	return time.Duration(cpu + wait)
}

// phases are a request's CPU phase and waiting phase at m in flight, in
// nanoseconds.
func (s service) phases(m float64) (cpu, wait float64) {
	// Fixed point: the share of requests in their CPU phase depends on
	// how stretched each phase is.
	cpu, wait = float64(s.cpu), float64(s.wait)
	for range 50 {
		onCPU := m * cpu / (cpu + wait)
		cpu = float64(s.cpu) * math.Max(1, onCPU/s.cpus)
		wait = float64(s.wait)
		if s.cap > 0 {
			wait *= math.Max(1, (m-onCPU)/float64(s.cap))
		}
	}
	return cpu, wait
}

// onCPU is how many of m in flight want a CPU.
func (s service) onCPU(m float64) float64 {
	cpu, wait := s.phases(m)
	return m * cpu / (cpu + wait)
}

// capacity is the most requests per second the service completes.
func (s service) capacity() float64 {
	c := s.cpus / s.cpu.Seconds()
	if s.cap > 0 {
		c = math.Min(c, float64(s.cap)/(s.cpu+s.wait).Seconds())
	}
	return c
}

var (
	cpuBound = service{cpus: 2, cpu: 10 * time.Millisecond}
	ioBound  = service{cpus: 2, cpu: 100 * time.Microsecond, wait: 50 * time.Millisecond}
	capped   = service{cpus: 2, cpu: 100 * time.Microsecond, wait: 50 * time.Millisecond, cap: 32}
	mixed    = service{cpus: 2, cpu: 5 * time.Millisecond, wait: 50 * time.Millisecond}
)

// run drives a under load for d in 100 ms windows of fake time, feeding it
// the model's samples, and returns the limit after each window.
func run(t *testing.T, a *limit.Auto, s service, rate func(time.Duration) float64, d time.Duration) []int {
	t.Helper()
	return runSampled(t, a, s, rate, d, 1)
}

// runSampled is run feeding a one completion in every k (a power of two),
// of Weight k, as a caller that times a sample of its requests does; like
// the admission Controller, it times more (halving k) where fewer than 16
// samples a window would be left.
func runSampled(t *testing.T, a *limit.Auto, s service, rate func(time.Duration) float64, d time.Duration, k int) []int {
	t.Helper()
	var limits []int
	start := time.Now()
	for el := time.Duration(0); el < d; el += limit.AutoWindow {
		time.Sleep(limit.AutoWindow)
		now := time.Now()
		w, rtt := s.window(a.Limit(), rate(el))
		// The completions of the window, with a little spread so that
		// the RTT bound's precision check passes.
		n := int(math.Min(rate(el), float64(w.Inflight)/rtt.Seconds()) * limit.AutoWindow.Seconds())
		kw := k
		for kw > 1 && n/kw < 16 {
			kw /= 2
		}
		for i := 0; i < n; i += kw {
			jitter := 1 + 0.01*float64(i%3-1)
			a.Observe(limit.Sample{Now: now, RTT: time.Duration(float64(rtt) * jitter), Inflight: w.Inflight, Weight: kw})
		}
		w.Now = now
		limits = append(limits, a.Tick(w))
		if now.Sub(start) != el+limit.AutoWindow {
			t.Fatalf("fake time drifted: %v after %v", now.Sub(start), el)
		}
	}
	return limits
}

// noise makes run's model look like a real, shared machine: each
// request's RTT varies by up to Jitter either way, each window's by up to
// WindowJitter (the machine's other load), and with probability Bursts a
// window sees Runnable goroutines from a burst of work outside the
// limit (a GC, the goroutines that read requests and write sheds).
type noise struct {
	Jitter, WindowJitter, Bursts float64
	rng                          *rand.Rand
}

func newNoise(seed uint64) *noise {
	return &noise{Jitter: 0.2, WindowJitter: 0.15, Bursts: 0.1, rng: rand.New(rand.NewPCG(seed, 1))}
}

func (n *noise) spread(x float64) float64 { return 1 + x*(2*n.rng.Float64()-1) }

// runNoisy is run with n's noise on every window and sample.
func runNoisy(t *testing.T, a *limit.Auto, s service, rate func(time.Duration) float64, d time.Duration, n *noise) []int {
	t.Helper()
	var limits []int
	for el := time.Duration(0); el < d; el += limit.AutoWindow {
		time.Sleep(limit.AutoWindow)
		now := time.Now()
		w, rtt := s.window(a.Limit(), rate(el))
		rtt = time.Duration(float64(rtt) * n.spread(n.WindowJitter))
		count := int(math.Min(rate(el), float64(w.Inflight)/rtt.Seconds()) * limit.AutoWindow.Seconds() * n.spread(0.1))
		for range count {
			a.Observe(limit.Sample{Now: now, RTT: time.Duration(float64(rtt) * n.spread(n.Jitter)), Inflight: w.Inflight})
		}
		if n.rng.Float64() < n.Bursts {
			w.Runnable += 2 + 2*n.rng.Float64()
			w.CPUBusy = math.Min(1, w.CPUBusy+0.3)
		}
		w.Now = now
		limits = append(limits, a.Tick(w))
	}
	return limits
}

func constant(r float64) func(time.Duration) float64 { return func(time.Duration) float64 { return r } }

func newAuto(t *testing.T, o limit.AutoOptions) *limit.Auto {
	t.Helper()
	if o.CPUs == 0 {
		o.CPUs = 2 // the models' CPUs, whatever this machine has
	}
	a, err := limit.NewAuto(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// goodput is the share of the offered rate the model completes at limit l.
func goodput(s service, l int, rate float64) float64 {
	w, rtt := s.window(l, rate)
	return math.Min(rate, w.MeanInflight/rtt.Seconds()) / math.Min(rate, s.capacity())
}

func TestAutoCPUBound(t *testing.T) {
	for _, mult := range []float64{2, 4, 8} {
		for _, initial := range []int{0, 100} {
			t.Run("", func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					a := newAuto(t, limit.AutoOptions{Initial: initial})
					limits := run(t, a, cpuBound, constant(mult*cpuBound.capacity()), 5*time.Second)
					// Cold start: within one window the limit is at the
					// CPUs (2), or one above while it probes.
					for i, l := range limits {
						if l < 2 || l > 3 {
							t.Fatalf("%vx from %d: limit %d after window %d, want 2 or 3 (all %v)", mult, initial, l, i+1, limits)
						}
					}
				})
			})
		}
	}
}

func TestAutoStepHalfToEightX(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		step := 5 * time.Second
		rate := func(el time.Duration) float64 {
			if el < step {
				return 0.5 * cpuBound.capacity()
			}
			return 8 * cpuBound.capacity()
		}
		limits := run(t, a, cpuBound, rate, 10*time.Second)
		after := limits[step/limit.AutoWindow:]
		for i, l := range after {
			if l > 3 {
				t.Fatalf("limit %d %v after the step to 8x, want <= 3 (all %v)", l, time.Duration(i+1)*limit.AutoWindow, limits)
			}
		}
		if g := goodput(cpuBound, after[len(after)-1], rate(step)); g < 0.95 {
			t.Errorf("modelled goodput %.2f at 8x, want >= 0.95", g)
		}
	})
}

func TestAutoIOBound(t *testing.T) {
	// 8000/s x 50 ms: 400 in flight wanted, 40% of the CPUs busy.
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		limits := run(t, a, ioBound, constant(8000), 5*time.Second)
		for i, l := range limits {
			if l < 2 {
				t.Fatalf("limit %d after window %d, below the CPUs (2)", l, i+1)
			}
		}
		reached := -1
		for i, l := range limits {
			if l >= 400 {
				reached = i
				break
			}
		}
		if reached < 0 || time.Duration(reached+1)*limit.AutoWindow > 2*time.Second {
			t.Fatalf("limit reached 400 after window %d, want within 2 s (all %v)", reached+1, limits)
		}
		for i, l := range limits[reached:] {
			if l < 400 {
				t.Fatalf("limit fell to %d, %d windows after reaching 400 (all %v)", l, i, limits)
			}
		}
	})
}

func TestAutoDownstreamCap(t *testing.T) {
	// A downstream that serves 32 at once, 50 ms each: 640/s. At 8x the
	// CPUs stay idle, so only the RTT bound stops the limit.
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		rate := 8 * capped.capacity()
		limits := run(t, a, capped, constant(rate), 20*time.Second)
		last := limits[len(limits)-50:] // the last 5 s
		lo, hi := slicesMinMax(last)
		if lo < 32 || hi > 64 {
			t.Errorf("limit in [%d, %d] over the last 5 s, want within [32, 64] (all %v)", lo, hi, limits)
		}
		if g := goodput(capped, lo, rate); g < 0.99 {
			t.Errorf("modelled goodput %.2f at the lowest limit %d, want >= 0.99", g, lo)
		}
	})
}

func TestAutoMixed(t *testing.T) {
	// 5 ms of CPU and 50 ms of waiting: the CPUs fill at about 2 x 55/5 =
	// 22 in flight; the limit lands between the CPU-bound 2 and that.
	synctest.Test(t, func(t *testing.T) {
		a := newAuto(t, limit.AutoOptions{})
		rate := 4 * mixed.capacity()
		limits := run(t, a, mixed, constant(rate), 10*time.Second)
		last := limits[len(limits)-30:]
		lo, hi := slicesMinMax(last)
		if lo < 16 || hi > 40 {
			t.Errorf("limit in [%d, %d] over the last 3 s, want within [16, 40] (all %v)", lo, hi, limits)
		}
		if g := goodput(mixed, lo, rate); g < 0.85 {
			t.Errorf("modelled goodput %.2f at the lowest limit %d, want >= 0.85", g, lo)
		}
	})
}

func slicesMinMax(s []int) (lo, hi int) {
	lo, hi = s[0], s[0]
	for _, v := range s {
		lo, hi = min(lo, v), max(hi, v)
	}
	return lo, hi
}

func TestAutoRules(t *testing.T) {
	busy := limit.Window{CPUs: 2, Runnable: 0, CPUBusy: 1}
	for _, tc := range []struct {
		name    string
		initial int
		w       limit.Window
		want    int
	}{
		{"oversubscribed: cut to in-flight minus runnable", 50,
			limit.Window{CPUs: 2, MeanInflight: 40, PeakInflight: 50, Runnable: 30, CPUBusy: 1}, 10},
		{"oversubscribed: never below the CPUs", 50,
			limit.Window{CPUs: 2, MeanInflight: 50, PeakInflight: 50, Runnable: 49, CPUBusy: 1}, 2},
		{"floor follows the CPUs", 3,
			limit.Window{CPUs: 4, MeanInflight: 10, PeakInflight: 10, Runnable: 9, CPUBusy: 1}, 4},
		{"runnable, but few of those in flight: holds", 100,
			limit.Window{CPUs: 2, MeanInflight: 80, PeakInflight: 100, Runnable: 5, CPUBusy: 0.3}, 100},
		{"runnable within the slack: no cut", 10,
			limit.Window{CPUs: 2, MeanInflight: 10, PeakInflight: 10, Runnable: 1, CPUBusy: 1}, 10},
		{"binding and idle CPUs: fourfold at most", 10,
			limit.Window{CPUs: 2, MeanInflight: 10, PeakInflight: 10, Runnable: 0, CPUBusy: 0.05}, 40},
		{"binding, CPUs a quarter busy: to the projection", 10,
			limit.Window{CPUs: 2, MeanInflight: 10, PeakInflight: 10, Runnable: 0, CPUBusy: 0.25}, 36},
		{"binding, CPUs half busy: aims at 90% busy", 10,
			limit.Window{CPUs: 2, MeanInflight: 10, PeakInflight: 10, Runnable: 0, CPUBusy: 0.6}, 15},
		{"binding, CPUs nearly busy: at least one more", 10,
			limit.Window{CPUs: 2, MeanInflight: 10, PeakInflight: 10, Runnable: 0, CPUBusy: 0.89}, 11},
		{"binding but CPUs busy: holds", 10, func() limit.Window { w := busy; w.PeakInflight = 10; return w }(), 10},
		{"queued counts as binding", 10,
			limit.Window{CPUs: 2, MeanInflight: 9, PeakInflight: 9, Queued: 3, CPUBusy: 0.3}, 27},
		{"not binding: holds", 10,
			limit.Window{CPUs: 2, MeanInflight: 3, PeakInflight: 5, CPUBusy: 0.1}, 10},
		{"unknown load: doubles while binding", 10,
			limit.Window{CPUs: 2, PeakInflight: 10, Runnable: math.NaN(), CPUBusy: math.NaN()}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := newAuto(t, limit.AutoOptions{Initial: tc.initial})
			if got := a.Tick(tc.w); got != tc.want {
				t.Errorf("got limit %d, want %d", got, tc.want)
			}
		})
	}
}

func TestAutoOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    limit.AutoOptions
		ok   bool
	}{
		{"zero", limit.AutoOptions{}, true},
		{"negative initial", limit.AutoOptions{Initial: -1}, false},
		{"negative min", limit.AutoOptions{Min: -1}, false},
		{"negative max", limit.AutoOptions{Max: -1}, false},
		{"min above max", limit.AutoOptions{Min: 10, Max: 5}, false},
		{"min above the default max", limit.AutoOptions{Min: 1001}, false},
		{"tolerance below 1", limit.AutoOptions{Tolerance: 0.5}, false},
		{"tolerance NaN", limit.AutoOptions{Tolerance: math.NaN()}, false},
		{"negative CPUs", limit.AutoOptions{CPUs: -1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.o.Validate(); (err == nil) != tc.ok {
				t.Errorf("Validate() = %v, want ok %v", err, tc.ok)
			}
		})
	}
	// Min raises the floor above the CPUs; Max caps everything.
	a := newAuto(t, limit.AutoOptions{Min: 8, Max: 50})
	if got := a.Tick(limit.Window{CPUs: 2, MeanInflight: 40, PeakInflight: 50, Runnable: 38, CPUBusy: 1}); got != 8 {
		t.Errorf("with Min 8: got %d, want 8", got)
	}
	for range 10 {
		a.Tick(limit.Window{CPUs: 2, PeakInflight: 1000, CPUBusy: 0.01})
	}
	if got := a.Limit(); got != 50 {
		t.Errorf("with Max 50: got %d, want 50", got)
	}
	if got := newAuto(t, limit.AutoOptions{}).Window(); got != limit.AutoWindow {
		t.Errorf("Window() = %v, want %v", got, limit.AutoWindow)
	}
}

// Saturation is the last window's oversubscription: NaN before any window,
// 1 once runnable goroutines clearly exceed the slack, 0 when none wait,
// scaled down while they are fewer than a quarter of the requests in flight.
func TestAutoSaturation(t *testing.T) {
	a := newAuto(t, limit.AutoOptions{})
	if got := a.Saturation(); !math.IsNaN(got) {
		t.Errorf("before a window: got %v, want NaN", got)
	}
	for _, tc := range []struct {
		runnable, want float64
		inflight       float64
	}{{30, 1, 10}, {1, 0.5, 4}, {0, 0, 10}, {4, 0.4, 40}, {4, 1, 0}} {
		a.Tick(limit.Window{CPUs: 2, MeanInflight: tc.inflight, PeakInflight: 10, Runnable: tc.runnable, CPUBusy: 1})
		if got := a.Saturation(); got != tc.want {
			t.Errorf("runnable %v: got saturation %v, want %v", tc.runnable, got, tc.want)
		}
	}
}

// The same services on a noisy machine: the limit still lands where the
// quiet model puts it, the RTT bound near a downstream's cap and not
// below it, and an I/O-bound service is not throttled.
func TestAutoNoisy(t *testing.T) {
	for seed := range uint64(5) {
		t.Run("", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				a := newAuto(t, limit.AutoOptions{Max: 100})
				rate := 2 * capped.capacity()
				limits := runNoisy(t, a, capped, constant(rate), 20*time.Second, newNoise(seed))
				last := limits[len(limits)-50:]
				lo, hi := slicesMinMax(last)
				mean, served := 0.0, 0.0
				for _, l := range last {
					mean += float64(l) / float64(len(last))
					served += goodput(capped, l, rate) / float64(len(last))
				}
				if served < 0.95 {
					t.Errorf("capped, seed %d: modelled goodput %.2f over the last 5 s, want >= 0.95", seed, served)
				}
				t.Logf("capped, seed %d: limit mean %.0f in [%d, %d] over the last 5 s", seed, mean, lo, hi)
				if mean < 32 || mean > 56 || lo < 20 || hi > 80 {
					t.Errorf("capped, seed %d: limit mean %.0f in [%d, %d] over the last 5 s, want a mean in [32, 56] (all %v)", seed, mean, lo, hi, limits)
				}
			})
			synctest.Test(t, func(t *testing.T) {
				a := newAuto(t, limit.AutoOptions{})
				limits := runNoisy(t, a, ioBound, constant(8000), 10*time.Second, newNoise(seed))
				last := limits[len(limits)-50:]
				// A burst may trim the limit for a window; it must not throttle.
				lo, _ := slicesMinMax(last)
				if g := goodput(ioBound, lo, 8000); g < 0.97 {
					t.Errorf("I/O-bound, seed %d: limit fell to %d over the last 5 s, modelled goodput %.2f, want >= 0.97 (all %v)", seed, lo, g, limits)
				}
			})
		})
	}
}

// A downstream that gets twice as slow, for good, without a cap: the
// concurrency needed doubles and the limit follows within 2 s, on a
// noisy machine too; it does not hold the service to the old knee until
// the records expire.
func TestAutoSlowerService(t *testing.T) {
	slower := ioBound
	slower.wait = 2 * ioBound.wait
	for seed := range uint64(3) {
		synctest.Test(t, func(t *testing.T) {
			a := newAuto(t, limit.AutoOptions{})
			n := newNoise(seed)
			runNoisy(t, a, ioBound, constant(4000), 5*time.Second, n) // 200 in flight
			limits := runNoisy(t, a, slower, constant(4000), 5*time.Second, n)
			after := limits[20:] // from 2 s after the change
			lo, _ := slicesMinMax(after)
			if g := goodput(slower, lo, 4000); g < 0.97 {
				t.Errorf("seed %d: limit fell to %d from 2 s after the change, modelled goodput %.2f, want >= 0.97 (all %v)", seed, lo, g, limits)
			}
		})
	}
}
