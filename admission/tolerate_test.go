package admission_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// dipRun offers two 7 ms renderers 0.7x their capacity for 14 s, their
// renders twice as slow from 8 s to 10 s (a successor starting cold beside
// them), with tolerate called at the start, and returns the sheds by
// reason and the longest wait of a served request.
func dipRun(t *testing.T, lifo bool, tolerate func(c *admission.Controller, start time.Time)) (map[admission.Reason]int, time.Duration) {
	t.Helper()
	const render = 7 * time.Millisecond
	c := newController(t, 2, admission.Options{QueueSize: 1000, QueueTimeout: 5 * time.Second,
		CoDelTarget: 5 * time.Millisecond, CoDelInterval: 100 * time.Millisecond, AdaptiveLIFO: lifo})
	start := time.Now()
	tolerate(c, start)
	dipFrom, dipTo := start.Add(8*time.Second), start.Add(10*time.Second)
	rate := 0.7 * 2 / render.Seconds()
	rng := rand.New(rand.NewPCG(3, 4))
	var mu sync.Mutex
	shed := map[admission.Reason]int{}
	var longest time.Duration
	var wg sync.WaitGroup
	for end := start.Add(14 * time.Second); ; {
		time.Sleep(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		if !time.Now().Before(end) {
			break
		}
		service := time.Duration(float64(render) * (0.5 + rng.Float64()))
		wg.Go(func() {
			arrived := time.Now()
			p, err := c.Acquire(context.Background(), admission.Request{})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r, _ := admission.ShedReason(err)
				shed[r]++
				return
			}
			longest = max(longest, time.Since(arrived))
			if now := time.Now(); !now.Before(dipFrom) && now.Before(dipTo) {
				service *= 2
			}
			mu.Unlock()
			time.Sleep(service)
			p.DoneSample(limit.Sample{Now: time.Now(), RTT: service})
			mu.Lock()
		})
	}
	wg.Wait()
	return shed, longest
}

// A capacity dip of two seconds at 0.7x load is a standing queue to CoDel,
// which sheds it; tolerated, it is queued through (about 0.6 s at its
// deepest), with or without adaptive LIFO, which a queue under the bound
// does not turn on.
func TestTolerateQueuesThroughAPlannedDip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shed, _ := dipRun(t, false, func(*admission.Controller, time.Time) {})
		if shed[admission.ReasonCoDel] == 0 {
			t.Fatalf("untolerated dip: sheds %v, want CoDel's", shed)
		}
	})
	for _, lifo := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			const bound = time.Second
			shed, longest := dipRun(t, lifo, func(c *admission.Controller, start time.Time) {
				// Over the dip and the queue's draining after it, as a
				// rolling restart and its grace are.
				c.Tolerate(start.Add(12*time.Second), bound)
			})
			if len(shed) != 0 {
				t.Errorf("tolerated dip, adaptive LIFO %v: sheds %v, want none", lifo, shed)
			}
			if longest > bound {
				t.Errorf("tolerated dip, adaptive LIFO %v: longest wait %v, want at most the bound %v", lifo, longest, bound)
			}
		})
	}
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 2, admission.Options{CoDelTarget: 5 * time.Millisecond})
		if got := c.Stats().TolerateUntil; !got.IsZero() {
			t.Errorf("Stats().TolerateUntil = %v before any Tolerate; want zero", got)
		}
		until := time.Now().Add(time.Minute)
		c.Tolerate(until, time.Second)
		if got := c.Stats().TolerateUntil; !got.Equal(until) {
			t.Errorf("Stats().TolerateUntil = %v; want %v", got, until)
		}
		if got := c.Stats().TolerateBound; got != time.Second {
			t.Errorf("Stats().TolerateBound = %v; want 1s", got)
		}
	})
	// Ended (a zero time) before the dip: shed again.
	synctest.Test(t, func(t *testing.T) {
		shed, _ := dipRun(t, false, func(c *admission.Controller, start time.Time) {
			c.Tolerate(start.Add(time.Hour), time.Second)
			c.Tolerate(time.Time{}, 0)
		})
		if shed[admission.ReasonCoDel] == 0 {
			t.Errorf("tolerance ended: sheds %v, want CoDel's", shed)
		}
	})
}

// wantTolerance fails t unless c's tolerance in force is bound until until.
func wantTolerance(t *testing.T, c *admission.Controller, when string, until time.Time, bound time.Duration) {
	t.Helper()
	if st := c.Stats(); !st.TolerateUntil.Equal(until) || st.TolerateBound != bound {
		t.Errorf("%s: got %v until %v, want %v until %v", when, st.TolerateBound, st.TolerateUntil, bound, until)
	}
}

// Tolerances from two sources overlap (a roll, and the ramp of the worker
// it started): a call while one is in force extends it, the later end and
// the longer bound holding; one after it ended starts afresh; a zero end
// ends it at once.
func TestTolerateExtends(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 2, admission.Options{CoDelTarget: 5 * time.Millisecond})
		now := time.Now()
		c.Tolerate(now.Add(time.Minute), time.Second)
		c.Tolerate(now.Add(10*time.Second), 500*time.Millisecond)
		wantTolerance(t, c, "a shorter tolerance inside a longer one", now.Add(time.Minute), time.Second)
		c.Tolerate(now.Add(2*time.Minute), 2*time.Second)
		wantTolerance(t, c, "a longer one", now.Add(2*time.Minute), 2*time.Second)
		c.Tolerate(time.Time{}, 0)
		wantTolerance(t, c, "ended", time.Time{}, 0)
		c.Tolerate(now.Add(time.Second), time.Second)
		time.Sleep(2 * time.Second)
		later := time.Now()
		c.Tolerate(later.Add(time.Second), 100*time.Millisecond)
		wantTolerance(t, c, "after the last one ended", later.Add(time.Second), 100*time.Millisecond)
	})
}

// A rolling restart's end shortens its own tolerance to its grace:
// ReplaceTolerance puts the new end and bound in place of a longer one in
// force (Tolerate would keep the later end), and later calls extend it as
// before.
func TestReplaceTolerance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 2, admission.Options{CoDelTarget: 5 * time.Millisecond})
		now := time.Now()
		c.Tolerate(now.Add(time.Hour), time.Second)
		c.ReplaceTolerance(now.Add(2*time.Second), 500*time.Millisecond)
		wantTolerance(t, c, "an hour replaced by 2 s", now.Add(2*time.Second), 500*time.Millisecond)
		c.Tolerate(now.Add(3*time.Second), time.Second)
		wantTolerance(t, c, "then extended", now.Add(3*time.Second), time.Second)
		c.ReplaceTolerance(time.Time{}, 0)
		wantTolerance(t, c, "ended", time.Time{}, 0)
	})
}

// When a tolerance ends, its bound fades to CoDel's own over
// admission.TolerateFade instead of dropping at once: the queue it held
// (a fresh front's, built while its workers' limits climbed) is shed as
// its requests pass the fading bound, not in one burst of everything
// over CoDel's floor. Measured on fresh fronts above capacity, the burst
// was a hole of half a second in what was served.
func TestToleranceFadesWhenItEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{QueueSize: 1000, QueueTimeout: 10 * time.Second,
			CoDelTarget: 5 * time.Millisecond, CoDelInterval: 100 * time.Millisecond})
		start := time.Now()
		const bound = time.Second
		end := start.Add(time.Second)
		c.Tolerate(end, bound)
		type shed struct{ at, waited time.Duration }
		var mu sync.Mutex
		var sheds []shed
		var wg sync.WaitGroup
		// One slot, 10 ms a request, 150 requests a second for 2.5 s: a
		// queue that grows by 50 a second, half a second deep when the
		// tolerance ends.
		for i := range 375 {
			wg.Go(func() {
				time.Sleep(time.Duration(i) * 20 * time.Millisecond / 3)
				arrived := time.Now()
				p, err := c.Acquire(context.Background(), admission.Request{})
				if err != nil {
					mu.Lock()
					sheds = append(sheds, shed{time.Since(start), time.Since(arrived)})
					mu.Unlock()
					return
				}
				time.Sleep(10 * time.Millisecond)
				p.DoneSample(limit.Sample{Now: time.Now(), RTT: 10 * time.Millisecond})
			})
		}
		wg.Wait()
		fading := 0
		for _, s := range sheds {
			into := s.at - end.Sub(start)
			if into < 0 {
				t.Errorf("shed %v before the tolerance ended, having waited %v: want none", -into, s.waited)
			}
			if into < 0 || into >= admission.TolerateFade {
				continue
			}
			fading++
			if least := bound * (admission.TolerateFade - into) / admission.TolerateFade; s.waited < least-time.Millisecond {
				t.Errorf("shed %v after the tolerance ended, having waited %v: want at least the fading bound, %v", into, s.waited, least)
			}
		}
		if fading == 0 {
			t.Errorf("no request shed while the tolerance faded (%d sheds); want the queue shed as it passes the bound", len(sheds))
		}
	})
}

// EndTolerance ends, from now, the tolerance its caller set (its bound
// fading from now), not one another source extended past it: a proxy
// whose workers' first ramps are over ends its own, never a rolling
// restart's.
func TestEndTolerance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 2, admission.Options{CoDelTarget: 5 * time.Millisecond})
		now := time.Now()
		ramp := now.Add(time.Second)
		c.Tolerate(ramp, 500*time.Millisecond)
		time.Sleep(100 * time.Millisecond)
		c.EndTolerance(ramp)
		wantTolerance(t, c, "its own, ended", now.Add(100*time.Millisecond), 500*time.Millisecond)

		later := time.Now()
		c.Tolerate(later.Add(time.Second), 500*time.Millisecond)
		c.Tolerate(later.Add(time.Hour), 500*time.Millisecond) // a roll's
		c.EndTolerance(later.Add(time.Second))
		wantTolerance(t, c, "extended by a roll", later.Add(time.Hour), 500*time.Millisecond)
	})
}
