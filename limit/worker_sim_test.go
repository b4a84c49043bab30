package limit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// simWorker is a Node.js worker under synctest's clock: one event loop
// (a token) that a request holds for its CPU part, after an I/O part that
// waits without it. It measures its event-loop utilization as
// node/sluice-worker does: over the last interval of at least 100 ms,
// computed when a response is written.
type simWorker struct {
	loop chan struct{} // capacity 1: the event loop

	mu       sync.Mutex
	cpu, io  time.Duration
	perHeld  time.Duration // waited more per request held at arrival
	turn     time.Duration // the loop's cost per turn, shared by the requests ready for it
	ready    int           // requests waiting for the loop
	jitter   *rand.Rand    // non-nil: the I/O wait and the CPU vary by up to ±50%
	held     int           // requests in the worker
	busy     time.Duration // loop time used, ever
	snapAt   time.Time
	snapBusy time.Duration
	elu      float64
}

func newSimWorker(cpu, io time.Duration) *simWorker {
	return &simWorker{loop: make(chan struct{}, 1), cpu: cpu, io: io, snapAt: time.Now()}
}

func (w *simWorker) set(cpu, io time.Duration) {
	w.mu.Lock()
	w.cpu, w.io = cpu, io
	w.mu.Unlock()
}

// contended makes every request wait d more, outside its loop, for each
// request the worker holds when it arrives: a worker on a machine short of
// CPU, where each request in flight makes the others a little slower
// without its event loop being busy (measured on real Node workers: 60 ms
// waits took 87 ms at 16 at once and 113 ms at 32, the loops 30-40% busy).
func (w *simWorker) contended(d time.Duration) {
	w.mu.Lock()
	w.perHeld = d
	w.mu.Unlock()
}

// serve runs one request and returns the saturation it reports.
func (w *simWorker) serve() float64 {
	w.mu.Lock()
	cpu, io := w.cpu, w.io+time.Duration(w.held)*w.perHeld
	if w.jitter != nil {
		io = time.Duration(float64(io) * (0.5 + w.jitter.Float64()))
		cpu = time.Duration(float64(cpu) * (0.5 + w.jitter.Float64()))
	}
	w.held++
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		w.held--
		w.mu.Unlock()
	}()
	time.Sleep(io)
	w.mu.Lock()
	w.ready++
	w.mu.Unlock()
	w.loop <- struct{}{}
	w.mu.Lock()
	w.ready--
	cpu += w.turn / time.Duration(1+w.ready)
	w.mu.Unlock()
	time.Sleep(cpu)
	<-w.loop
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.busy += cpu
	if d := now.Sub(w.snapAt); d >= 100*time.Millisecond {
		w.elu = float64(w.busy-w.snapBusy) / float64(d)
		w.snapAt, w.snapBusy = now, w.busy
	}
	return min(w.elu, 1)
}

// simFront dispatches an open-loop load to one simWorker through a
// Worker, as the pool does: a FIFO queue in front, at most the limit
// in the worker, a queue timeout. report turns the worker's saturation
// into the header value it sends ("" for none).
type simFront struct {
	w      *simWorker
	report func(sat float64) string

	// delay, when set, is the front's own delay for a request it has
	// handed the worker: the time it takes to be scheduled to read the
	// answer. It holds the slot and counts in the rtt, as in reality.
	delay func() time.Duration
	// fixed, when positive, is a limit that never changes (a hand-tuned
	// front to compare with).
	fixed int

	mu       sync.Mutex
	wl       *Worker
	held     int
	queue    []chan struct{}
	served   int
	good     int // served within a second of arriving: a client's timeout
	maxLimit int
}

func newSimFront(w *simWorker, maxLimit int, report func(float64) string) *simFront {
	return &simFront{w: w, report: report, maxLimit: maxLimit,
		wl: mustWorker(WorkerOptions{Initial: 1, Max: maxLimit})}
}

func (f *simFront) limit() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wl.limit
}

// request is one arrival: it waits up to 500 ms for a slot, then runs.
func (f *simFront) request() {
	arrived := time.Now()
	f.mu.Lock()
	if f.held < f.wl.limit && len(f.queue) == 0 {
		f.held++
		f.wl.Occupy(time.Now(), f.held)
		f.mu.Unlock()
	} else {
		ready := make(chan struct{})
		f.queue = append(f.queue, ready)
		f.mu.Unlock()
		t := time.NewTimer(500 * time.Millisecond)
		select {
		case <-ready:
			t.Stop()
		case <-t.C:
			f.mu.Lock()
			for i, q := range f.queue {
				if q == ready {
					f.queue = append(f.queue[:i], f.queue[i+1:]...)
					f.mu.Unlock()
					return // shed
				}
			}
			f.mu.Unlock() // granted in the same instant
		}
	}
	start := time.Now()
	sat := f.w.serve()
	if f.delay != nil {
		f.mu.Lock()
		d := f.delay()
		f.mu.Unlock()
		time.Sleep(d)
	}
	now := time.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held--
	f.served++
	if now.Sub(arrived) <= time.Second {
		f.good++
	}
	f.wl.Occupy(now, f.held)
	if v := f.report(sat); v != "" {
		f.wl.Report(parseReport(v))
	}
	f.wl.Complete(now.Sub(start), false)
	f.wl.Decide(now)
	if f.fixed > 0 {
		f.wl.limit = f.fixed
	}
	for f.held < f.wl.limit && len(f.queue) > 0 {
		f.held++
		f.wl.Occupy(now, f.held)
		close(f.queue[0])
		f.queue = f.queue[1:]
	}
}

// load offers rate requests per second for d, and records the limit every
// 100 ms.
func (f *simFront) load(rate float64, d time.Duration) []int {
	var wg sync.WaitGroup
	gap := time.Duration(float64(time.Second) / rate)
	var trace []int
	start := time.Now()
	nextTrace := start
	for now := start; now.Sub(start) < d; now = time.Now() {
		if !now.Before(nextTrace) {
			trace = append(trace, f.limit())
			nextTrace = nextTrace.Add(100 * time.Millisecond)
		}
		wg.Go(f.request)
		time.Sleep(gap)
	}
	wg.Wait()
	return trace
}

// frontNoise returns a front's scheduling delay on a busy machine, drawn
// from r: exponential with a mean of mean for each request, and stalls of
// 30-80 ms (a few a second, the front's core taken by its neighbours)
// during which no answer is read: every request the worker finishes in one
// waits for its end. None of it depends on how many requests the worker
// holds, so no limit can lower it.
func frontNoise(r *rand.Rand, mean time.Duration) func() time.Duration {
	var stallFrom, stallTo time.Time
	return func() time.Duration {
		now := time.Now()
		for !now.Before(stallTo) {
			if stallTo.IsZero() {
				stallTo = now
			}
			stallFrom = stallTo.Add(time.Duration(r.ExpFloat64() * float64(250*time.Millisecond)))
			stallTo = stallFrom.Add(30*time.Millisecond + time.Duration(r.Int64N(int64(50*time.Millisecond))))
		}
		d := time.Duration(r.ExpFloat64() * float64(mean))
		if !now.Before(stallFrom) {
			d += stallTo.Sub(now)
		}
		return d
	}
}

func mustWorker(o WorkerOptions) *Worker {
	w, err := NewWorker(time.Now(), o)
	if err != nil {
		panic(err)
	}
	return w
}

// parseReport reads a report as the front does: NaN when it is no number.
func parseReport(v string) float64 {
	s, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return math.NaN()
	}
	return s
}

func elu(sat float64) string { return strconv.FormatFloat(sat, 'f', 3, 64) }

func noReport(float64) string { return "" }

// share returns the fraction of trace[from:] for which keep holds.
func share(trace []int, from int, keep func(int) bool) float64 {
	n := 0
	for _, l := range trace[from:] {
		if keep(l) {
			n++
		}
	}
	return float64(n) / float64(len(trace)-from)
}

func TestWorkerLimitSimCPUBoundStaysAtOne(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(float64) string
		atOne  float64 // the least share of time at 1
		most   int     // the highest limit allowed
	}{
		{"reports saturation", elu, 0.95, 3},
		// Probing costs a window now and then, with backoff.
		{"reports nothing", noReport, 0.7, 3},
		// Renders varying by ±50% now and then let a probe look like a
		// gain for a window; it is undone at the next.
		{"reports nothing, noisy", noReport, 0.7, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newSimWorker(10*time.Millisecond, 0)
				if strings.HasSuffix(tc.name, "noisy") {
					w.jitter = rand.New(rand.NewPCG(1, 1))
				}
				f := newSimFront(w, 64, tc.report)
				// 2x its capacity of 100/s, then light load.
				trace := f.load(200, 5*time.Second)
				if got := share(trace, 10, func(l int) bool { return l == 1 }); got < tc.atOne {
					t.Errorf("at 2x: limit 1 for %.0f%% of the time, want at least %.0f%% (trace %v)", 100*got, 100*tc.atOne, trace)
				}
				if got := slicesMax(trace); got > tc.most {
					t.Errorf("at 2x: limit reached %d, want at most %d (trace %v)", got, tc.most, trace)
				}
				trace = f.load(60, 3*time.Second)
				if got := slicesMax(trace); got > tc.most {
					t.Errorf("at 0.6x: the limit drifted to %d, want at most %d (trace %v)", got, tc.most, trace)
				}
			})
		})
	}
}

// An async worker that has just started (sluice's start, a deploy, a
// restart) reaches the concurrency that saturates its loop in under a
// second: the limit doubles while the loop is under half busy and latency
// stays near no-load (slow start), each step bounded by the concurrency
// the loop's reports project, and only then climbs by square-root steps.
// Without slow start it took 1.1 s to reach 25. With ±50% noise in the
// waits and renders too. Past saturation its throughput no longer grows
// (its CPU per request is the same however many it holds), and only a
// window's noise keeps a probe up: over 16 seeds the limit stayed within
// 22-55, at most 1.8 times the loop's saturation (20-40 when it was cut
// at saturation).
func TestWorkerLimitSimAsyncReachesSaturation(t *testing.T) {
	for seed := range uint64(4) {
		t.Run("seed "+strconv.FormatUint(seed, 10), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				// 2 ms of CPU after 60 ms of I/O: the loop saturates near
				// 31 requests at once (500/s).
				w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
				if seed > 0 {
					w.jitter = rand.New(rand.NewPCG(seed, seed))
				}
				f := newSimFront(w, 64, elu)
				trace := f.load(800, 4*time.Second)
				reached := -1
				for i, l := range trace {
					if l >= 25 {
						reached = i
						break
					}
				}
				if reached < 0 || reached > 8 {
					t.Fatalf("limit reached 25 after %d windows of 100 ms, want within 0.8 s (trace %v)", reached, trace)
				}
				if hi := slicesMax(trace); hi > 56 {
					t.Errorf("limit overshot to %d, want at most 56, 1.8 times the loop's saturation (trace %v)", hi, trace)
				}
				last := trace[len(trace)-10:]
				if lo, hi := slicesMin(last), slicesMax(last); lo < 20 || hi > 56 {
					t.Errorf("settled in [%d, %d], want within [20, 56] around the loop's saturation (trace %v)", lo, hi, trace)
				}
				if rate := float64(f.served) / 4; rate < 0.88*500 {
					t.Errorf("served %.0f/s over 4 s from a cold start, want at least 88%% of the loop's 500/s", rate)
				}
			})
		})
	}
}

func TestWorkerLimitSimFollowsSlowerRenders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
		f := newSimFront(w, 64, elu)
		before := f.load(800, 3*time.Second)
		w.set(4*time.Millisecond, 60*time.Millisecond) // renders twice as slow: saturates near 16
		after := f.load(800, 3*time.Second)
		if got := before[len(before)-1]; got < 20 {
			t.Fatalf("before the step: limit %d, want at least 20 (trace %v)", got, before)
		}
		if got := after[20]; got > 20 || got < 8 {
			t.Errorf("2 s after the step: limit %d, want in [8, 20] (trace %v)", got, after)
		}
	})
}

// When async renders become CPU-bound ones (a deploy, a page whose data
// is now cached), the limit comes down to the one request a CPU-bound
// worker takes within a second, though the worker at first holds far
// fewer requests than its limit: a saturated loop whose requests queue
// inside it is held to what it holds. Cut only once the limit bound it
// (half of it held), it took 1.8 s, every request meanwhile waiting
// behind up to 30 others inside the worker.
//
// Also when the loop never reads saturated (the kernel's measure of a
// CPU-bound worker that shares its CPU with a neighbour reads 0.93-0.97):
// its requests past three times their no-load latency in two windows, the
// cut applies to what it holds. Only the guard cuts such a worker, and it
// stops at 6, where its requests take twice the async ones' no-load
// latency; cut only once the limit bound, it got there in 1.6 s.
func TestWorkerLimitSimFollowsAsyncToCPUBound(t *testing.T) {
	for _, tc := range []struct {
		name   string
		report func(float64) string
		down   int // the limit it comes down to, within a second and a bit, and stays at or under
		within int // windows of 100 ms
	}{
		{"reports saturation", elu, 3, 10},
		{"reports 0.95 at most", func(s float64) string { return elu(0.95 * s) }, 6, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
				f := newSimFront(w, 64, tc.report)
				before := f.load(400, 3*time.Second)
				if got := before[len(before)-1]; got < 20 {
					t.Fatalf("async at 400/s: limit %d, want at least 20 (trace %v)", got, before)
				}
				w.set(20*time.Millisecond, 0) // 50/s, at 1.5x
				after := f.load(75, 3*time.Second)
				i := slices.IndexFunc(after, func(l int) bool { return l <= tc.down })
				if i < 0 || i > tc.within {
					t.Fatalf("CPU-bound at 1.5x: limit at %d or less after %d windows of 100 ms, want within %d (trace %v)", tc.down, i, tc.within, after)
				}
				if got := slicesMax(after[i:]); got > tc.down {
					t.Errorf("CPU-bound at 1.5x: limit back up to %d, want at most %d (trace %v)", got, tc.down, after)
				}
			})
		})
	}
}

// When CPU-bound renders become async ones, the limit climbs back from
// the CPU-bound worker's 1 or 2 by doubling while the loop is under a
// quarter busy, as in a first slow start, not by square-root steps (1.0 s
// to reach 20, 92% of 400/s served over the 3 s).
func TestWorkerLimitSimFollowsCPUBoundToAsync(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newSimWorker(10*time.Millisecond, 0)
		f := newSimFront(w, 64, elu)
		before := f.load(150, 3*time.Second)
		if got := slicesMax(before[10:]); got > 3 {
			t.Fatalf("CPU-bound at 1.5x: limit up to %d, want at most 3 (trace %v)", got, before)
		}
		w.set(2*time.Millisecond, 60*time.Millisecond) // saturates near 31 at once, 500/s
		served := f.served
		after := f.load(400, 3*time.Second)
		if i := slices.IndexFunc(after, func(l int) bool { return l >= 20 }); i < 0 || i > 7 {
			t.Errorf("async at 400/s: limit reached 20 after %d windows of 100 ms, want within 0.7 s (trace %v)", i, after)
		}
		if got := float64(f.served-served) / 1200; got < 0.97 {
			t.Errorf("async at 400/s: served %.1f%% over 3 s, want at least 97%% (trace %v)", 100*got, after)
		}
	})
}

// An async worker whose waits grow fourfold (its database slowed down)
// needs four times the requests at once for the same throughput, and its
// loop stays mostly idle: its limit must not fall. Its latency is four
// times its no-load latency, as if its requests queued inside it, and
// the guard cut for it; the cut is undone when the requests take as long
// at the lower limit. Before, cut after cut took the limit from 34 to 7
// and served 35% of 200/s.
func TestWorkerLimitSimSlowerWaitsKeepServing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
		f := newSimFront(w, 64, elu)
		f.load(200, 3*time.Second)
		w.set(2*time.Millisecond, 240*time.Millisecond) // 48 at once for 200/s
		good := f.good
		after := f.load(200, 4*time.Second)
		if got := float64(f.good-good) / 800; got < 0.95 {
			t.Errorf("waits of 240 ms at 200/s: %.1f%% served within 1 s over 4 s, want at least 95%% (trace %v)", 100*got, after)
		}
		if got := after[len(after)-1]; got < 48 {
			t.Errorf("waits of 240 ms at 200/s: limit %d at the end, want at least the 48 the load needs (trace %v)", got, after)
		}
	})
}

func TestWorkerLimitSimAsyncWithoutReportsGrows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newSimFront(newSimWorker(2*time.Millisecond, 60*time.Millisecond), 64, noReport)
		trace := f.load(400, 4*time.Second)
		if got := slicesMin(trace[len(trace)-10:]); got <= 4 {
			t.Errorf("a worker that reports nothing stayed at %d, want above 4 (trace %v)", got, trace)
		}
	})
}

// A worker that reports nothing, on a machine short of CPU: each request
// held makes the others 1.5 ms slower, and throughput still grows with the
// limit up to the maximum (64: 405/s; 32: 290/s; 20: 217/s, where a limit
// that keeps latency within 1.5 times its no-load value stops).
// With noise (waits and renders varying by ±50%) a window's throughput
// is only roughly known, and probes up fail that would have gained: the
// limit climbs less far, but still more than half way.
func TestWorkerLimitSimContendedAsyncWithoutReports(t *testing.T) {
	for _, tc := range []struct {
		name string
		seed uint64 // 0: no noise
		want float64
	}{
		{"steady", 0, 0.8},
		{"noisy 1", 1, 0.5},
		{"noisy 2", 2, 0.5},
		{"noisy 3", 3, 0.5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
				w.contended(1500 * time.Microsecond)
				if tc.seed != 0 {
					w.jitter = rand.New(rand.NewPCG(tc.seed, tc.seed))
				}
				f := newSimFront(w, 64, noReport)
				f.load(800, 4*time.Second)
				f.served = 0
				trace := f.load(800, 4*time.Second)
				if rate := float64(f.served) / 4; rate < tc.want*405 {
					t.Errorf("served %.0f/s, want at least %.0f%% of the 405/s a limit of 64 serves (trace %v)", rate, 100*tc.want, trace)
				}
				if got := slicesMin(trace); tc.seed == 0 && got < 24 {
					t.Errorf("limit fell to %d, want at least 24 (trace %v)", got, trace)
				}
			})
		})
	}
}

// A worker that reports nothing and whose renders become twice as slow is
// followed down: the limit that saturated its loop now queues requests
// inside it.
func TestWorkerLimitSimFollowsSlowerRendersWithoutReports(t *testing.T) {
	for _, tc := range []struct {
		name    string
		seed    uint64 // 0: no noise
		settled int    // windows after the step by which the limit is down
		most    int    // the highest limit allowed from then on
	}{
		// Down is at most 28: a limit settled at 24, near what the loop
		// takes, probes up by its square root; with noise a failed probe
		// is judged on a second window, so a probe from 25 (to 30) may
		// still be seen after the step.
		{"steady", 0, 20, 28},
		{"noisy 2", 2, 30, 30},
		{"noisy 3", 3, 30, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
				if tc.seed != 0 {
					w.jitter = rand.New(rand.NewPCG(tc.seed, tc.seed))
				}
				f := newSimFront(w, 64, noReport)
				before := f.load(800, 4*time.Second)
				w.set(4*time.Millisecond, 60*time.Millisecond) // saturates near 16
				after := f.load(800, 4*time.Second)
				if got := before[len(before)-1]; got < 24 {
					t.Fatalf("before the step: limit %d, want at least 24 (trace %v)", got, before)
				}
				if got := slicesMax(after[tc.settled:]); got > tc.most {
					t.Errorf("from %d windows after the step: limit up to %d, want at most %d (trace %v)", tc.settled, got, tc.most, after)
				}
				if got := slicesMin(after[tc.settled:]); got < 8 {
					t.Errorf("from %d windows after the step: limit down to %d, want at least 8 (trace %v)", tc.settled, got, after)
				}
			})
		})
	}
}

func TestWorkerLimitSimLyingWorker(t *testing.T) {
	for _, v := range []string{"1.5", "-0.2", "NaN", "abc", "", "+Inf"} {
		t.Run(v, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				lie := func(float64) string {
					if v == "" {
						return " " // present but empty
					}
					return v
				}
				f := newSimFront(newSimWorker(10*time.Millisecond, 0), 64, lie)
				trace := f.load(200, 3*time.Second)
				f.mu.Lock()
				bad := f.wl.badReport
				f.mu.Unlock()
				if bad == 0 {
					t.Errorf("no bad report counted")
				}
				// Judged on latency instead: a CPU-bound worker stays near 1.
				if got := share(trace, 10, func(l int) bool { return l == 1 }); got < 0.7 {
					t.Errorf("limit 1 for %.0f%% of the time, want at least 70%% (trace %v)", 100*got, trace)
				}
			})
		})
	}
}

func slicesMax(s []int) int {
	m := math.MinInt
	for _, v := range s {
		m = max(m, v)
	}
	return m
}

func slicesMin(s []int) int {
	m := math.MaxInt
	for _, v := range s {
		m = min(m, v)
	}
	return m
}

// A worker whose loop looks idle while its requests queue inside it (its
// reports say 0.3; the front is slow to feed it, or its CPU is stolen) is
// held back by its latency.
func TestWorkerLimitSimLatencyGuardsAnIdleLookingLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		idle := func(float64) string { return "0.300" }
		f := newSimFront(newSimWorker(10*time.Millisecond, 0), 64, idle)
		trace := f.load(200, 4*time.Second)
		// Never more than its latency allows: at 3 requests at once its
		// latency is three times the no-load one, the bound; the step past
		// it (by the square root of 3, to 5) is cut back.
		if got := slicesMax(trace); got > 5 {
			t.Errorf("limit reached %d, want at most 5 (trace %v)", got, trace)
		}
		// The scheduling of the simulated requests varies from run to run:
		// 37-67% of the time at 3 or below over 60 runs.
		if got := share(trace, 10, func(l int) bool { return l <= 3 }); got < 0.25 {
			t.Errorf("limit at most 3 for %.0f%% of the time, want at least 25%% (trace %v)", 100*got, trace)
		}
	})
}

// An async worker that reports nothing, on a machine a little short of CPU
// (each request held makes the others 0.5 ms slower), behind a front whose
// own scheduling delays stretch every request's latency by a noisy amount
// that no limit changes: the limit must not read that noise as queueing
// inside the worker. It serves at least 85% of what a fixed limit of 32 serves
// through the same noise.
func TestWorkerLimitSimAsyncWithoutReportsThroughFrontNoise(t *testing.T) {
	for _, tc := range []struct {
		name string
		mean time.Duration
		seed uint64
	}{
		{"5 ms", 5 * time.Millisecond, 1},
		{"10 ms", 10 * time.Millisecond, 2},
		{"15 ms", 15 * time.Millisecond, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			run := func(fixed int) (float64, []int) {
				var rate float64
				var trace []int
				synctest.Test(t, func(t *testing.T) {
					w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
					w.jitter = rand.New(rand.NewPCG(tc.seed, 7))
					w.contended(500 * time.Microsecond)
					f := newSimFront(w, 64, noReport)
					f.delay = frontNoise(rand.New(rand.NewPCG(tc.seed, 8)), tc.mean)
					f.fixed = fixed
					if fixed > 0 {
						f.wl.limit = fixed
					}
					f.load(800, 4*time.Second)
					f.served = 0
					trace = f.load(800, 4*time.Second)
					rate = float64(f.served) / 4
				})
				return rate, trace
			}
			want, _ := run(32)
			got, trace := run(0)
			t.Logf("fixed 32: %.0f/s; adaptive: %.0f/s, trace %v", want, got, trace)
			if got < 0.85*want {
				t.Errorf("served %.0f/s, want at least 85%% of the %.0f/s a fixed limit of 32 serves (trace %v)", got, want, trace)
			}
		})
	}
}

// An async worker (2 ms of CPU after 60 ms of I/O: 500/s at most) offered
// 2x and 8x what it can serve, through a front that queues the excess for
// up to 500 ms: the adaptive limit serves at least 97% of what the best
// fixed limit (32, hand-tuned as for HAProxy's maxconn) serves, from the
// worker's reports or the kernel's equivalent. 8x cannot be measured on
// the suite's 2-core machine (the load generator takes its core), so it
// is shown here. With front noise the fixed limit serves less than the
// adaptive one (see TestWorkerLimitSimAsyncWithoutReportsThroughFrontNoise).
func TestWorkerLimitSimAsyncMatchesFixed(t *testing.T) {
	for _, load := range []float64{2, 8} {
		t.Run(strconv.FormatFloat(load, 'f', -1, 64)+"x", func(t *testing.T) {
			run := func(fixed int, report func(float64) string) float64 {
				var rate float64
				synctest.Test(t, func(t *testing.T) {
					w := newSimWorker(2*time.Millisecond, 60*time.Millisecond)
					w.jitter = rand.New(rand.NewPCG(1, 7))
					f := newSimFront(w, 64, report)
					f.fixed = fixed
					if fixed > 0 {
						f.wl.limit = fixed
					}
					f.load(500*load, 3*time.Second) // past the start
					f.served = 0
					f.load(500*load, 4*time.Second)
					rate = float64(f.served) / 4
				})
				return rate
			}
			fixed, adaptive := run(32, noReport), run(0, elu)
			t.Logf("fixed 32: %.0f/s; adaptive: %.0f/s (%.2fx)", fixed, adaptive, adaptive/fixed)
			if adaptive < 0.97*fixed {
				t.Errorf("served %.0f/s, want at least 97%% of the %.0f/s a fixed limit of 32 serves", adaptive, fixed)
			}
		})
	}
}

// An async Node worker's CPU per request falls as it holds more: its
// loop's turns (the poll, timers, the microtask checkpoint) are shared
// by more ready requests (measured on next start: 2.0 ms at 16 at once,
// 1.7 at 32, 1.65 at 64). Here each request takes 1.6 ms of loop after
// 60 ms of I/O, and a turn 0.6 ms more, shared by the requests waiting
// for the loop: 2.2 ms for one alone, so the loop saturates near 30 at
// once, and its throughput still grows to about 700/s at 64 (550/s at
// 32). Offered 1,000/s and 4,000/s, through a front that queues up to 500 ms, the
// adaptive limit serves at least 1.1 times what a fixed 32 serves
// (HAProxy's maxconn in the benchmarks) and at least 0.9 times what a
// fixed 64 serves: 1.23-1.29 and 0.96-1.0 times. Cut at the loop's
// saturation, it served 0.99-1.04 times a fixed 32.
func TestWorkerLimitSimSaturatedAsyncClimbs(t *testing.T) {
	for _, rate := range []float64{1000, 4000} {
		for seed := range uint64(3) {
			t.Run(fmt.Sprintf("%v a second, seed %d", rate, seed), func(t *testing.T) {
				run := func(fixed int) (float64, []int) {
					var served float64
					var trace []int
					synctest.Test(t, func(t *testing.T) {
						w := newSimWorker(1600*time.Microsecond, 60*time.Millisecond)
						w.turn = 600 * time.Microsecond
						w.jitter = rand.New(rand.NewPCG(seed, 7))
						f := newSimFront(w, 64, elu)
						f.fixed = fixed
						if fixed > 0 {
							f.wl.limit = fixed
						}
						f.load(rate, 3*time.Second) // past the start
						f.served = 0
						trace = f.load(rate, 4*time.Second)
						served = float64(f.served) / 4
					})
					return served, trace
				}
				at32, _ := run(32)
				at64, _ := run(64)
				got, trace := run(0)
				t.Logf("fixed 32: %.0f/s, fixed 64: %.0f/s, adaptive: %.0f/s (trace %v)", at32, at64, got, trace)
				if got < 1.1*at32 || got < 0.9*at64 {
					t.Errorf("served %.0f/s, want at least 1.1 times the %.0f/s of a fixed 32 and 0.9 times the %.0f/s of a fixed 64 (trace %v)",
						got, at32, at64, trace)
				}
			})
		}
	}
}
