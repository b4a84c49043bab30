package proxy_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

// clients keeps n clients busy with path for d, each sending its next
// request when the last is answered, and returns the headers the clients
// saw.
func (g *rig) clients(n int, d time.Duration, path string) []string {
	var mu sync.Mutex
	var leaked []string
	var wg sync.WaitGroup
	end := time.Now().Add(d)
	for range n {
		wg.Go(func() {
			for time.Now().Before(end) {
				c := g.get(path)
				c.result()
				if v := c.w.Header().Get(proxy.HeaderSaturation); v != "" {
					mu.Lock()
					leaked = append(leaked, v)
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return leaked
}

func endpointStats(t *testing.T, g *rig) proxy.EndpointStats {
	t.Helper()
	st := g.p.Stats()
	if len(st.Endpoints) != 1 {
		t.Fatalf("got %d endpoints, want 1", len(st.Endpoints))
	}
	return st.Endpoints[0]
}

// A worker that reports an idle event loop while requests queue for it is
// given more at once; one that reports saturation is brought back near 1.
// The Controller's limit is the worker's, and the header never reaches a
// client.
func TestAdaptiveWorkerFollowsItsSaturation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{QueueSize: 100, QueueTimeout: 10 * time.Second})
		w, _ := g.adaptiveWorker(16)
		if e := endpointStats(t, g); e.Limit != 4 || !e.Adaptive || e.Saturation != -1 {
			t.Fatalf("new adaptive worker: got %+v, want limit 4, adaptive, no saturation", e)
		}
		leaked := g.clients(12, 2*time.Second, "/sleep?d=50ms&sat=0.05")
		e := endpointStats(t, g)
		if e.Limit < 8 || w.peak.Load() < 8 {
			t.Errorf("idle loop, 12 clients: got limit %d, worker peak %d; want both at least 8", e.Limit, w.peak.Load())
		}
		if e.Saturation != 0.05 {
			t.Errorf("got saturation %v, want the last report 0.05", e.Saturation)
		}
		if got := g.c.Stats().Limit; got != e.Limit {
			t.Errorf("Controller limit %d, worker limit %d: want them equal", got, e.Limit)
		}
		// Renders that became CPU-bound: four times as long, each using
		// the saturated loop for a third of its no-load latency.
		leaked = append(leaked, g.clients(12, 2*time.Second, "/sleep?d=200ms&sat=0.99")...)
		if e := endpointStats(t, g); e.Limit > 2 || e.Saturation != 0.99 {
			t.Errorf("saturated loop: got limit %d, saturation %v; want back near 1, the last report 0.99", e.Limit, e.Saturation)
		}
		if len(leaked) > 0 {
			t.Errorf("clients saw %s: %q", proxy.HeaderSaturation, leaked[:1])
		}
	})
}

// The first adaptive worker starts at four requests at once (its
// concurrency, if lower); one added beside adaptive workers starts at the
// mean of their limits, as a worker restarted in a rolling deploy takes
// its predecessor's share at once.
func TestAdaptiveWorkerFirstLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{QueueSize: 100, QueueTimeout: 10 * time.Second})
		g.adaptiveWorker(16)
		if e := g.p.Stats().Endpoints[0]; e.Limit != 4 {
			t.Fatalf("the first adaptive worker: got limit %d, want 4", e.Limit)
		}
		g.clients(12, time.Second, "/sleep?d=50ms&sat=0.05")
		first := g.p.Stats().Endpoints[0].Limit
		if first <= 4 {
			t.Fatalf("idle loop, 12 clients: got limit %d, want above 4", first)
		}
		g.adaptiveWorker(64)
		if e := g.p.Stats().Endpoints[1]; e.Limit != first {
			t.Errorf("a worker added beside one at %d: got limit %d, want %d", first, e.Limit, first)
		}

		// A worker whose every response reports its loop saturated
		// (0.99), as a renderer that takes one at a time does, comes down
		// to 1 within a second of load, holding at most its first 4.
		g = newRig(t, proxy.Options{}, admission.Options{QueueSize: 100, QueueTimeout: 10 * time.Second})
		w, _ := g.adaptiveWorker(16)
		g.clients(8, time.Second, "/sleep?d=20ms&sat=0.99")
		if e := g.p.Stats().Endpoints[0]; e.Limit > 1 || w.peak.Load() > 4 {
			t.Errorf("a CPU-bound worker after a second at 8 clients: got limit %d, peak %d; want 1, at most 4", e.Limit, w.peak.Load())
		}

		g = newRig(t, proxy.Options{}, admission.Options{})
		g.adaptiveWorker(2)
		if e := g.p.Stats().Endpoints[0]; e.Limit != 2 {
			t.Errorf("the first adaptive worker, at most 2: got limit %d, want 2", e.Limit)
		}
	})
}

// A report that cannot be read is counted and stripped, never trusted.
func TestAdaptiveWorkerBadReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		g.adaptiveWorker(4)
		leaked := g.clients(1, 200*time.Millisecond, "/sleep?d=10ms&sat=7")
		if e := endpointStats(t, g); e.BadReports == 0 || e.Saturation != -1 {
			t.Errorf("got %d bad reports, saturation %v; want some and -1", e.BadReports, e.Saturation)
		}
		if len(leaked) > 0 {
			t.Errorf("clients saw %s: %q", proxy.HeaderSaturation, leaked[0])
		}
	})
}

// A fixed worker's limit never moves, whatever it reports.
func TestFixedWorkerIgnoresReports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{QueueSize: 100, QueueTimeout: 10 * time.Second})
		w, _ := g.worker(2)
		g.clients(8, time.Second, "/sleep?d=50ms&sat=0.01")
		if e := endpointStats(t, g); e.Limit != 2 || w.peak.Load() != 2 {
			t.Errorf("got limit %d, peak %d; want 2 and 2", e.Limit, w.peak.Load())
		}
	})
}

// rampBurst offers a fresh adaptive worker (its limit at 4, up to 64) 400
// requests a second for a second, each waiting 60 ms on an idle event
// loop: far below what the worker serves once its limit has doubled to
// 32, far above what its first slots do. It returns the requests shed and
// the Controller's stats.
func rampBurst(t *testing.T) (shed int, st admission.Stats) {
	t.Helper()
	g := newRig(t, proxy.Options{}, admission.Options{QueueTimeout: 10 * time.Second,
		CoDelTarget: 5 * time.Millisecond, CoDelInterval: 100 * time.Millisecond, AdaptiveLIFO: true})
	g.adaptiveWorker(64)
	var calls []*call
	for range 400 {
		calls = append(calls, g.get("/sleep?d=60ms&sat=0.05"))
		time.Sleep(2500 * time.Microsecond)
	}
	st = g.c.Stats()
	for _, c := range calls {
		if code, _ := c.result(); code != 200 {
			shed++
		}
	}
	return shed, st
}

// A worker started into traffic ramps its limit from 4 while the queue
// holds what its few slots cannot take yet: the Controller tolerates the
// wait (up to half a second) while the limit doubles, and serves the
// backlog as the limit catches up, instead of CoDel shedding it.
func TestRampIsQueuedThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		shed, st := rampBurst(t)
		if shed != 0 || st.Shed.Total() != 0 {
			t.Errorf("a worker ramping from 4 under 400/s: %d requests failed, sheds %v; want every one served", shed, st.Shed)
		}
		if st.TolerateBound != 500*time.Millisecond || st.TolerateUntil.IsZero() {
			t.Errorf("got tolerance %v until %v, want 500ms while the limit doubled", st.TolerateBound, st.TolerateUntil)
		}
	})
}

// An adaptive worker that has not answered is given more at its first
// limit only within firstWindow (20 ms) of its first request; then its
// limit is held at what it holds, and what arrives waits in the
// Controller's queue, until its first answer gives the limit back.
func TestAdaptiveWorkerFirstAnswerHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Lookahead: -1}, admission.Options{QueueSize: 10, QueueTimeout: 10 * time.Second})
		w, _ := g.adaptiveWorker(16)
		a := g.get("/block/a")
		synctest.Wait()
		time.Sleep(5 * time.Millisecond)
		b := g.get("/block/b") // within the first window: sent
		synctest.Wait()
		time.Sleep(30 * time.Millisecond)
		synctest.Wait()
		if got := g.p.Stats().Endpoints[0].Limit; got != 2 {
			t.Fatalf("35 ms after its first request, unanswered: limit %d, want 2 (what it holds)", got)
		}
		c := g.get("/block/c")
		synctest.Wait()
		if got := w.seen(); len(got) != 2 {
			t.Fatalf("worker got %q, want only /block/a and /block/b: /block/c waits for an answer", got)
		}
		if got := g.c.Stats().Queued; got != 1 {
			t.Errorf("Controller's queue: %d, want 1 (/block/c)", got)
		}
		w.open("a")
		if code, _ := a.result(); code != 200 {
			t.Fatalf("a: got %d, want 200", code)
		}
		synctest.Wait()
		if got := w.seen(); len(got) != 3 {
			t.Errorf("after the first answer: worker got %q, want /block/c too", got)
		}
		if got := g.p.Stats().Endpoints[0].Limit; got != 4 {
			t.Errorf("after the first answer: limit %d, want its first limit back (4)", got)
		}
		w.open("b")
		w.open("c")
		for _, r := range []*call{b, c} {
			if code, _ := r.result(); code != 200 {
				t.Errorf("got %d, want 200", code)
			}
		}
	})
}

// The queue tolerated for a first ramp is overload once every worker's
// ramp is over below where it began (CPU-bound workers cut toward 1): the
// Controller's tolerance ends then, not a second after the limit last
// grew (its grace). Two CPU-bound Hypernova workers cut to 1 a quarter
// second into a fresh front's load at 2x left a queue standing to the
// tolerance's half second for another second, then shed whole. A ramp
// that ends higher (an async worker's, cut at its saturation) leaves the
// tolerance to its grace: its slots serve what queued.
func TestRampToleranceEndsWithTheRamps(t *testing.T) {
	for _, tc := range []struct {
		name  string
		ramp  int // requests at 400/s, the loop idle
		cut   int // then saturated: at 400/s, or one at a time
		one   bool
		ended bool
	}{
		// One request at a time, the loop 90% busy: a renderer at
		// capacity, cut to 1 (see limit.Worker's first ramp).
		{"cut below its first limit", 60, 8, true, true},
		{"cut above it", 100, 60, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{}, admission.Options{QueueTimeout: 10 * time.Second,
					CoDelTarget: 5 * time.Millisecond, CoDelInterval: 100 * time.Millisecond})
				g.adaptiveWorker(64)
				var calls []*call
				offer := func(n int, path string) {
					for range n {
						calls = append(calls, g.get(path))
						time.Sleep(2500 * time.Microsecond)
					}
				}
				defer func() {
					for _, c := range calls {
						c.result()
					}
				}()
				offer(tc.ramp, "/sleep?d=60ms&sat=0.05")
				if st := g.c.Stats(); !st.TolerateUntil.After(time.Now()) {
					t.Errorf("ramping: got tolerance until %v, want one in force", st.TolerateUntil)
					return
				}
				if tc.one {
					for range tc.cut {
						g.get("/sleep?d=60ms&sat=0.9").result()
					}
				} else {
					offer(tc.cut, "/sleep?d=60ms&sat=0.99")
				}
				l := endpointStats(t, g).Limit
				if tc.ended != (l < 4) {
					t.Errorf("after the saturated requests: limit %d", l)
					return
				}
				if st := g.c.Stats(); st.TolerateUntil.After(time.Now()) == tc.ended {
					t.Errorf("limit %d: got tolerance until %v (now %v), want it ended %v", l, st.TolerateUntil, time.Now(), tc.ended)
				}
			})
		})
	}
}
