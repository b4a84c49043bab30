package admission_test

import (
	"context"
	"math"
	"sync"
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
				p.Done()
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
