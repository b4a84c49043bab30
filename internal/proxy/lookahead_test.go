package proxy_test

import (
	"slices"
	"strconv"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
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
