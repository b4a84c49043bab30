package admission_test

import (
	"context"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// weights is a limit.Algorithm with a fixed limit that counts the samples
// it is fed and the requests they stand for.
type weights struct {
	limit int

	mu      sync.Mutex
	samples int
	weight  int
}

func (w *weights) Limit() int { return w.limit }
func (w *weights) Observe(s limit.Sample) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	w.weight += max(s.Weight, 1)
	return w.limit
}
func (w *weights) Tick(limit.Window) int { return w.limit }

func (w *weights) counts() (samples, weight int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.weight
}

// closedLoop runs workers goroutines that each take a slot for req, hold
// it for service and give it back with Done, until d has passed; it
// returns how many were done. It must run inside a synctest bubble.
func closedLoop(t *testing.T, c *admission.Controller, workers int, req admission.Request, service, d time.Duration) int {
	t.Helper()
	return closedLoopWith(t, c, workers, req, service, d, admission.Permit.Done)
}

// closedLoopWith is closedLoop giving the slots back with giveBack.
func closedLoopWith(t *testing.T, c *admission.Controller, workers int, req admission.Request, service, d time.Duration, giveBack func(admission.Permit)) int {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	done := 0
	end := time.Now().Add(d)
	for range workers {
		wg.Go(func() {
			for n := 0; time.Now().Before(end); n++ {
				p, err := c.Acquire(context.Background(), req)
				if err != nil {
					t.Error(err)
					return
				}
				time.Sleep(service)
				giveBack(p)
				mu.Lock()
				done++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return done
}

// serviceCount is the service histogram's count over every class.
func serviceCount(c *admission.Controller) uint64 {
	hs := c.Histograms()
	var n uint64
	for _, p := range admission.Priorities() {
		h := hs.Service(p, admission.ServiceDone)
		n += h.Count()
	}
	return n
}

// A service far below a few thousand completions a window is timed on
// every request: each Done feeds the limit one sample of weight 1.
func TestLowRateTimesEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &weights{limit: 100}
		c := newController(t, 0, admission.Options{Limit: alg, SampleWindow: 100 * time.Millisecond})
		done := closedLoop(t, c, 8, admission.Request{}, 10*time.Millisecond, 2*time.Second) // 800/s
		samples, weight := alg.counts()
		if samples != done || weight != done || serviceCount(c) != uint64(done) {
			t.Errorf("%d done: %d samples of weight %d, %d in the service histogram; want every one timed",
				done, samples, weight, serviceCount(c))
		}
	})
}

// At 100,000 completions a second (10,000 a 100 ms window) the Controller
// times a sample, of at least 1024 a window, and each sample stands for
// the requests it was taken from: the weights and the service histogram
// count every request, within 2%, and the counters stay exact.
func TestHighRateTimesASample(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &weights{limit: 1000}
		c := newController(t, 0, admission.Options{Limit: alg, SampleWindow: 100 * time.Millisecond})
		const d = time.Second
		done := closedLoop(t, c, 100, admission.Request{}, time.Millisecond, d)
		samples, weight := alg.counts()
		t.Logf("%d done: %d samples, weight %d, service histogram %d", done, samples, weight, serviceCount(c))
		if samples > done/4 {
			t.Errorf("%d samples of %d done, want at most a quarter timed", samples, done)
		}
		if perWindow := float64(samples) / (float64(d) / float64(100*time.Millisecond)); perWindow < 1024 {
			t.Errorf("%.0f samples a window, want at least 1024", perWindow)
		}
		for name, n := range map[string]int{"weights": weight, "service histogram": int(serviceCount(c))} {
			if math.Abs(float64(n-done)) > 0.02*float64(done) {
				t.Errorf("%s count %d requests, want %d within 2%%", name, n, done)
			}
		}
		if st := c.Stats(); st.Admitted != uint64(done) {
			t.Errorf("Stats.Admitted %d, want %d exactly", st.Admitted, done)
		}
	})
}

// A caller that times its own work and gives every slot back with
// DoneSample feeds the limit one sample of weight 1 per request, at a rate
// where the Controller's own timing would be sampled.
func TestDoneSampleWeighsOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &weights{limit: 1000}
		c := newController(t, 0, admission.Options{Limit: alg, SampleWindow: 100 * time.Millisecond})
		done := closedLoopWith(t, c, 100, admission.Request{}, time.Millisecond, time.Second, func(p admission.Permit) {
			p.DoneSample(limit.Sample{Now: time.Now(), RTT: time.Millisecond})
		})
		if samples, weight := alg.counts(); samples != done || weight != done {
			t.Errorf("%d given back with DoneSample: %d samples of weight %d, want %d of weight 1", done, samples, weight, done)
		}
	})
}

// Untimed requests do not count towards the rate that sets the sampling:
// a few timed requests beside many untimed ones are each timed.
func TestUntimedDoNotThinTheTimed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &weights{limit: 1000}
		c := newController(t, 0, admission.Options{Limit: alg, SampleWindow: 100 * time.Millisecond})
		var timed int
		var wg sync.WaitGroup
		wg.Go(func() { closedLoop(t, c, 100, admission.Request{Untimed: true}, time.Millisecond, time.Second) })
		wg.Go(func() { timed = closedLoop(t, c, 8, admission.Request{}, 10*time.Millisecond, time.Second) })
		wg.Wait()
		if samples, weight := alg.counts(); samples != timed || weight != timed {
			t.Errorf("%d timed requests done beside 100,000/s untimed: %d samples of weight %d, want every one timed", timed, samples, weight)
		}
	})
}

// counting is a limit.Algorithm that counts the samples it passes on.
type counting struct {
	limit.Algorithm
	samples atomic.Int64
}

func (c *counting) Observe(s limit.Sample) int {
	c.samples.Add(1)
	return c.Algorithm.Observe(s)
}

// The Gradient limit settles at the same limit when the Controller times a
// sample as when it times every request: 300 clients in a closed loop
// against a downstream that serves 128 at once in 2 ms (64,000/s, where
// the Controller times about one request in 4). The RTT statistics the
// rule uses are means and standard errors over the samples, which a
// sample estimates as well as every request does.
func TestGradientSampledSameLimit(t *testing.T) {
	var settled [2]float64
	var samples, done [2]int64
	for i, build := range []func(admission.Options) (*admission.Controller, error){admission.NewTimingAll, admission.New} {
		synctest.Test(t, func(t *testing.T) {
			g, err := limit.NewGradient(limit.GradientOptions{Initial: 50})
			if err != nil {
				t.Fatal(err)
			}
			alg := &counting{Algorithm: g}
			c, err := build(admission.Options{Limit: alg, SampleWindow: 100 * time.Millisecond, QueueSize: 1000, QueueTimeout: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			downstream := make(chan struct{}, 128)
			var limits []int
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(100 * time.Millisecond):
						limits = append(limits, c.Stats().Limit)
					}
				}
			})
			var n atomic.Int64
			end := time.Now().Add(2 * time.Second)
			var clients sync.WaitGroup
			for range 300 {
				clients.Go(func() {
					for time.Now().Before(end) {
						p, err := c.Acquire(context.Background(), admission.Request{})
						if err != nil {
							t.Error(err)
							return
						}
						downstream <- struct{}{}
						time.Sleep(2 * time.Millisecond)
						<-downstream
						p.Done()
						n.Add(1)
					}
				})
			}
			clients.Wait()
			close(stop)
			wg.Wait()
			samples[i], done[i] = alg.samples.Load(), n.Load()
			last := limits[len(limits)-10:] // the last second
			for _, l := range last {
				settled[i] += float64(l) / float64(len(last))
			}
			t.Logf("limits %v", limits)
		})
	}
	t.Logf("every request timed: %d samples of %d, limit %.1f over the last second; sampled: %d of %d, limit %.1f",
		samples[0], done[0], settled[0], samples[1], done[1], settled[1])
	if samples[1] > done[1]/3 {
		t.Errorf("sampled run: %d samples of %d done, want at most a third timed", samples[1], done[1])
	}
	if math.Abs(settled[1]-settled[0]) > 0.1*settled[0] {
		t.Errorf("limit %.1f sampled, %.1f timing every request: want within 10%%", settled[1], settled[0])
	}
}
