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

// Slow renders behind few slots, and clients whose patience is shorter
// than the queue the floor would let stand: the floor, S x 12/N, is 1.8 s
// for two renderers of 150-450 ms. A request served after waiting that
// long is rendered for a client already gone. These simulations hold the
// Controller to what a client waiting a second gets.

type patienceCfg struct {
	slots                int
	renderMin, renderMax time.Duration
	rho                  float64       // the arrivals' rate, a share of the slots' capacity
	patience             time.Duration // each client gives up this long after it arrived
	dur                  time.Duration
	seed                 uint64
}

type patienceRes struct {
	capacity float64 // requests the slots could serve in the run
	good     int     // served and answered within the client's patience
	served   int
	maxWait  time.Duration // the longest wait of a request admitted
}

func runPatience(t *testing.T, cfg patienceCfg) patienceRes {
	t.Helper()
	var res patienceRes
	synctest.Test(t, func(t *testing.T) {
		c, err := admission.New(admission.Options{Limit: limit.NewFixed(cfg.slots), QueueTimeout: 5 * time.Second,
			CoDelTarget: 5 * time.Millisecond, CoDelInterval: 100 * time.Millisecond, AdaptiveLIFO: true})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		rng := rand.New(rand.NewPCG(cfg.seed, 7))
		mean := (cfg.renderMin + cfg.renderMax) / 2
		rate := cfg.rho * float64(cfg.slots) / mean.Seconds()
		res.capacity = float64(cfg.slots) / mean.Seconds() * cfg.dur.Seconds()
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for time.Since(start) < cfg.dur {
			render := cfg.renderMin + time.Duration(rng.Float64()*float64(cfg.renderMax-cfg.renderMin))
			wg.Go(func() {
				arrived := time.Now()
				ctx, cancel := context.WithTimeout(context.Background(), cfg.patience)
				defer cancel()
				p, err := c.Acquire(ctx, admission.Request{})
				if err != nil {
					return
				}
				wait := time.Since(arrived)
				time.Sleep(render)
				p.Done()
				mu.Lock()
				defer mu.Unlock()
				res.served++
				res.maxWait = max(res.maxWait, wait)
				if time.Since(arrived) <= cfg.patience {
					res.good++
				}
			})
			time.Sleep(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
		}
		wg.Wait()
	})
	return res
}

// Under overload the floor stands a queue at most calmSojourn (250 ms),
// however slow the renders: two slots of 150-450 ms, clients of a second,
// at 2x and 4x. With the floor alone (1.8 s) every request served had
// waited for its client to give up, and almost none was answered in time.
func TestOverloadFloorBoundedForSlowRenders(t *testing.T) {
	for _, rho := range []float64{2, 4} {
		res := runPatience(t, patienceCfg{slots: 2, renderMin: 150 * time.Millisecond, renderMax: 450 * time.Millisecond,
			rho: rho, patience: time.Second, dur: 20 * time.Second, seed: 3})
		goodput := float64(res.good) / res.capacity
		t.Logf("%.0fx: goodput %.2f of capacity, %d served, longest wait %v", rho, goodput, res.served, res.maxWait)
		if goodput < 0.85 {
			t.Errorf("%.0fx: answered in time %.2f of capacity, want at least 0.85", rho, goodput)
		}
	}
}

// Not overloaded, a queue stands up to calmSojourn, or the floor if
// longer, but a served request waits at most calmLongest (500 ms): at
// 1.1x, with the floor at 1.8 s, requests waited past their clients'
// second.
func TestCalmQueueBoundedForSlowRenders(t *testing.T) {
	res := runPatience(t, patienceCfg{slots: 2, renderMin: 150 * time.Millisecond, renderMax: 450 * time.Millisecond,
		rho: 1.1, patience: 10 * time.Second, dur: 20 * time.Second, seed: 5})
	t.Logf("goodput %.2f of capacity, %d served, longest wait %v", float64(res.good)/res.capacity, res.served, res.maxWait)
	// A request is judged only when it is dequeued: it may wait up to a
	// render past the bound before a slot frees to judge it.
	if bound := 500*time.Millisecond + 450*time.Millisecond; res.maxWait > bound {
		t.Errorf("longest wait %v, want at most %v", res.maxWait, bound)
	}
}
