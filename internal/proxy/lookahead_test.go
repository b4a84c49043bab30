package proxy_test

import (
	"math"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// A worker at its limit is given Lookahead requests more, which wait in it
// for its render to end; the next request waits in the Controller's queue.
func TestLookaheadWaitsInTheBusyWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Lookahead: 1}, admission.Options{QueueSize: 10})
		w, _ := g.worker(1)
		a := g.get("/block/a")
		synctest.Wait()
		b := g.get("/block/b")
		synctest.Wait()
		if got, want := w.seen(), []string{"/block/a", "/block/b"}; !slices.Equal(got, want) {
			t.Fatalf("worker got %q while /block/a rendered, want %q: the next request at the worker", got, want)
		}
		c := g.get("/c")
		synctest.Wait()
		if got := g.c.Stats().Queued; got != 1 {
			t.Errorf("got %d queued, want 1: one request ahead, not two", got)
		}
		if got := g.c.Stats().Limit; got != 2 {
			t.Errorf("Controller's limit: got %d, want the worker's 1 and 1 ahead", got)
		}
		w.open("a")
		w.open("b")
		for _, r := range []*call{a, b, c} {
			if code, _ := r.result(); code != 200 {
				t.Errorf("got %d, want 200", code)
			}
		}
	})
}

// A request goes ahead of a busy worker's render only when no worker is
// below its limit, and then to the one picked least recently: its render
// began first.
func TestLookaheadOnlyWhenEveryWorkerIsBusy(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Lookahead: 1}, admission.Options{QueueSize: 10})
		w1, _ := g.worker(1)
		w2, _ := g.worker(1)
		a := g.get("/block/a")
		synctest.Wait()
		b := g.get("/block/b")
		synctest.Wait()
		if len(w1.seen()) != 1 || len(w2.seen()) != 1 {
			t.Fatalf("workers got %q and %q, want one request each before any goes ahead", w1.seen(), w2.seen())
		}
		c := g.get("/block/c")
		synctest.Wait()
		first := w1
		if w2.seen()[0] == "/block/a" {
			first = w2
		}
		if got := first.seen(); len(got) != 2 || got[1] != "/block/c" {
			t.Errorf("the worker whose render began first got %q, want /block/c ahead", got)
		}
		for _, w := range []*render{w1, w2} {
			w.openAll()
		}
		for _, r := range []*call{a, b, c} {
			if code, _ := r.result(); code != 200 {
				t.Errorf("got %d, want 200", code)
			}
		}
	})
}

// Negative Lookahead dispatches only to workers below their limit.
func TestLookaheadOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Lookahead: -1}, admission.Options{QueueSize: 10})
		w, _ := g.worker(1)
		a := g.get("/block/a")
		synctest.Wait()
		b := g.get("/b")
		synctest.Wait()
		if got := w.seen(); len(got) != 1 {
			t.Errorf("worker got %q, want only /block/a", got)
		}
		if got := g.c.Stats().Limit; got != 1 {
			t.Errorf("Controller's limit: got %d, want 1", got)
		}
		w.open("a")
		for _, r := range []*call{a, b} {
			if code, _ := r.result(); code != 200 {
				t.Errorf("got %d, want 200", code)
			}
		}
	})
}

// A worker keeps a connection open for each request it may hold, the
// lookahead's included: the request ahead does not pay for a new
// connection each time.
func TestLookaheadKeepsItsConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Lookahead: 1}, admission.Options{QueueSize: 10})
		w, _ := g.worker(1)
		for i := range 5 {
			k := strconv.Itoa(i)
			a := g.get("/block/" + k)
			synctest.Wait()
			b := g.get("/b")
			synctest.Wait()
			w.open(k)
			a.result()
			b.result()
		}
		if got := w.conns.Load(); got != 2 {
			t.Errorf("worker accepted %d connections over 5 rounds of two requests at once, want 2", got)
		}
	})
}

// contendedMeter is a fakeMeter that also gives the worker's contention,
// as the test sets it.
type contendedMeter struct {
	fakeMeter
	contention atomic.Uint64 // float64 bits
}

func (m *contendedMeter) setContention(c float64) { m.contention.Store(math.Float64bits(c)) }

func (m *contendedMeter) Contention() (float64, bool) {
	return math.Float64frombits(m.contention.Load()), m.reads.Load() > 1
}

// A worker whose CPU is contended (its main thread waits for it) has no
// lookahead: another process fills the gap between its renders, and a
// request sent ahead would only wait behind one. Its lookahead comes back
// once the contention falls, and a contention between the two bounds
// leaves it as it is.
func TestLookaheadWithdrawnWhileCPUContended(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &contendedMeter{}
		m.set(0.5)
		m.setContention(0.5)
		g := newRig(t, proxy.Options{Lookahead: 1, WorkerDemand: func(supervisor.Endpoint) proxy.DemandMeter { return m }},
			admission.Options{QueueSize: 10})
		w, _ := g.worker(1)
		state := func(when string, lookahead, limit int) {
			t.Helper()
			e := endpointStats(t, g)
			if e.Lookahead != lookahead || g.p.Stats().Ahead != lookahead || g.c.Stats().Limit != limit {
				t.Fatalf("%s: lookahead %d (pool %d), Controller's limit %d, contention %.2f; want lookahead %d, limit %d",
					when, e.Lookahead, g.p.Stats().Ahead, g.c.Stats().Limit, e.Contention, lookahead, limit)
			}
		}
		state("before any reading", 1, 2)

		g.clients(2, time.Second, "/sleep?d=20ms")
		state("contended 0.5", 0, 1)
		a := g.get("/block/a")
		synctest.Wait()
		b := g.get("/block/b")
		synctest.Wait()
		if got := w.seen(); got[len(got)-1] != "/block/a" || g.c.Stats().Queued != 1 {
			t.Errorf("contended: worker's last request %q, %d queued; want /block/a, and /block/b queued at the front",
				got[len(got)-1], g.c.Stats().Queued)
		}
		w.open("a")
		w.open("b")
		for _, r := range []*call{a, b} {
			if code, _ := r.result(); code != 200 {
				t.Errorf("got %d, want 200", code)
			}
		}

		m.setContention(0.2) // between the bounds: as it was
		g.clients(2, time.Second, "/sleep?d=20ms")
		state("then 0.2", 0, 1)
		m.setContention(0.02)
		g.clients(2, 2*time.Second, "/sleep?d=20ms")
		state("then 0.02", 1, 2)
		m.setContention(0.2)
		g.clients(2, 2*time.Second, "/sleep?d=20ms")
		state("then 0.2 again", 1, 2)
	})
}

// staleMeter tells a contention but never reads a demand: a meter that
// lost its worker, or found it multi-threaded, whose last contention is
// stale.
type staleMeter struct{ contendedMeter }

func (m *staleMeter) Read(time.Time) (float64, bool) {
	m.reads.Add(1)
	return 0, false
}

// underLoad runs two clients for a second against one worker of
// concurrency 1 with Lookahead 1, whose CPU m measures, and returns its
// stats.
func underLoad(t *testing.T, m proxy.DemandMeter) proxy.EndpointStats {
	t.Helper()
	g := newRig(t, proxy.Options{Lookahead: 1, WorkerDemand: func(supervisor.Endpoint) proxy.DemandMeter { return m }},
		admission.Options{QueueSize: 10})
	g.worker(1)
	g.clients(2, time.Second, "/sleep?d=20ms")
	return endpointStats(t, g)
}

// A meter that tells no contention (a plain DemandMeter), or only a stale
// one, leaves the lookahead on.
func TestLookaheadKeptWithoutContention(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &staleMeter{}
		m.setContention(0.9)
		m.reads.Store(2) // its Contention says known
		if e := underLoad(t, m); e.Lookahead != 1 || e.Contention != -1 || m.reads.Load() < 4 {
			t.Errorf("a stale contention: lookahead %d, contention %v after %d reads; want 1, -1 after several",
				e.Lookahead, e.Contention, m.reads.Load())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		m := &fakeMeter{}
		m.set(0.99)
		if e := underLoad(t, m); e.Lookahead != 1 || e.Contention != -1 || m.reads.Load() < 2 {
			t.Errorf("no contention told: lookahead %d, contention %v after %d readings; want 1, -1 after several",
				e.Lookahead, e.Contention, m.reads.Load())
		}
	})
}

// A worker whose requests hold their slot 100 ms or more, smoothed, has
// no lookahead: the request ahead would wait a whole render where no
// queue bound sees it. It has it again once they take under 60 ms, and
// not before.
func TestLookaheadOffForSlowRenders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Lookahead: 1}, admission.Options{QueueSize: 10})
		g.worker(1)
		limit := func() int { return g.c.Stats().Limit }
		if got := limit(); got != 2 {
			t.Fatalf("Controller's limit %d before any request, want the worker's 1 and 1 ahead", got)
		}
		get := func(d string) {
			t.Helper()
			if code, _ := g.get("/sleep?d=" + d).result(); code != 200 {
				t.Fatalf("got %d, want 200", code)
			}
		}
		get("150ms")
		if got := limit(); got != 1 {
			t.Errorf("after a request of 150 ms: Controller's limit %d, want 1 (no lookahead)", got)
		}
		for range 3 {
			get("80ms") // smoothed: 132, 119, 109 ms
		}
		if got := limit(); got != 1 {
			t.Errorf("after requests of 80 ms: Controller's limit %d, want 1 (not yet under 60 ms)", got)
		}
		for range 10 {
			get("10ms")
		}
		if got := limit(); got != 2 {
			t.Errorf("after requests of 10 ms: Controller's limit %d, want 2 (the lookahead back)", got)
		}
	})
}
