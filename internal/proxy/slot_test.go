package proxy_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/limit"
)

func TestServesThroughWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		g.worker(1)
		code, body := g.get("/hello").result()
		if code != 200 || body != "w1 /hello" {
			t.Errorf("got %d %q, want 200 %q", code, body, "w1 /hello")
		}
		if st := g.p.Stats(); st.Endpoints[0].Served != 1 || st.Outstanding != 0 {
			t.Errorf("got served %d, outstanding %d; want 1, 0", st.Endpoints[0].Served, st.Outstanding)
		}
	})
}

// A client that hangs up does not free its slot: the worker is still
// rendering, and the next request must wait for it to finish.
func TestSlotHeldAfterClientHangsUp(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)

		a := g.get("/block/a")
		synctest.Wait()
		a.cancel()
		synctest.Wait()
		if !a.finished() {
			t.Fatal("handler of a client that hung up is still running; want it to return")
		}

		b := g.get("/b")
		synctest.Wait()
		if got, want := w.seen(), []string{"/block/a"}; !slices.Equal(got, want) {
			t.Fatalf("worker saw %q while its render ran, want %q", got, want)
		}
		if got := g.c.Stats().Queued; got != 1 {
			t.Errorf("got %d queued, want 1", got)
		}

		w.open("a")
		if code, _ := b.result(); code != 200 {
			t.Errorf("got %d for the next request, want 200", code)
		}
		if got := w.peak.Load(); got != 1 {
			t.Errorf("worker peak concurrency %d, want 1", got)
		}
		if got := g.p.Stats().WastedRenders; got != 1 {
			t.Errorf("got %d wasted renders, want 1", got)
		}
	})
}

// A queued request whose client leaves is never sent to a worker.
func TestQueuedClientThatLeavesIsNeverDispatched(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)

		a := g.get("/block/a")
		synctest.Wait()
		b := g.get("/b")
		synctest.Wait()
		b.cancel()
		synctest.Wait()
		w.open("a")
		a.result()
		g.get("/c").result()

		if got, want := w.seen(), []string{"/block/a", "/c"}; !slices.Equal(got, want) {
			t.Errorf("worker saw %q, want %q", got, want)
		}
		if got := g.p.Stats().NeverDispatched; got != 1 {
			t.Errorf("got %d never dispatched, want 1", got)
		}
	})
}

// An admitted request whose client is already gone is not sent.
func TestAdmittedClientGoneIsNotSent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		c := g.send(httptest.NewRequestWithContext(ctx, "GET", "/gone", nil), nil)
		c.result()
		if got := w.seen(); len(got) != 0 {
			t.Errorf("worker saw %q, want nothing", got)
		}
		if got := g.p.Stats().NeverDispatched; got != 1 {
			t.Errorf("got %d never dispatched, want 1", got)
		}
		if got := g.c.Stats().Inflight; got != 0 {
			t.Errorf("got %d permits in flight, want 0", got)
		}
	})
}

// At Timeout the client gets 504, but the slot is kept until the worker
// answers: the next request waits for the render to end. The same when
// the response has begun and its body is still coming at Timeout.
func TestTimeoutKeepsSlotUntilWorkerAnswers(t *testing.T) {
	for _, path := range []string{"/block/a", "/halt/a"} {
		t.Run(path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{Timeout: time.Second}, admission.Options{QueueTimeout: time.Minute})
				w, _ := g.worker(1)
				start := time.Now()

				a := g.get(path)
				time.Sleep(time.Second - time.Nanosecond)
				synctest.Wait()
				if a.finished() {
					t.Fatal("answered before Timeout")
				}
				time.Sleep(time.Nanosecond)
				synctest.Wait()
				if !a.finished() {
					t.Fatal("not answered at Timeout")
				}
				if code, _ := a.result(); code != http.StatusGatewayTimeout {
					t.Errorf("got %d at Timeout, want 504", code)
				}
				if got := time.Since(start); got != time.Second {
					t.Errorf("answered after %v, want 1s", got)
				}

				b := g.get("/b")
				time.Sleep(5 * time.Second) // the render goes on past Timeout
				synctest.Wait()
				if got, want := w.seen(), []string{path}; !slices.Equal(got, want) {
					t.Fatalf("worker saw %q during the timed-out render, want %q", got, want)
				}
				if got := g.p.Stats().Outstanding; got != 1 {
					t.Errorf("got %d slots taken after the 504, want 1", got)
				}

				w.open("a")
				if code, body := b.result(); code != 200 || body != "w1 /b" {
					t.Errorf("got %d %q for the next request, want 200 %q", code, body, "w1 /b")
				}
				st := g.p.Stats()
				if st.GatewayTimeout != 1 || st.WastedRenders != 1 {
					t.Errorf("got %d timeouts, %d wasted; want 1, 1", st.GatewayTimeout, st.WastedRenders)
				}
			})
		})
	}
}

// A worker silent for Timeout plus HangGrace is hung: its connection is
// closed and its slot freed for the next request.
func TestHungWorkerFreesSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Timeout: time.Second, HangGrace: 2 * time.Second}, admission.Options{QueueTimeout: time.Minute})
		w, _ := g.worker(1)

		a := g.get("/block/never")
		synctest.Wait()
		b := g.get("/block/b")
		time.Sleep(3*time.Second - time.Nanosecond)
		synctest.Wait()
		if got := len(w.seen()); got != 1 {
			t.Fatalf("worker saw %d requests before the hang was declared, want 1", got)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if got, want := w.seen(), []string{"/block/never", "/block/b"}; !slices.Equal(got, want) {
			t.Errorf("worker saw %q after the hang, want %q", got, want)
		}
		if code, _ := a.result(); code != http.StatusGatewayTimeout {
			t.Errorf("got %d for the hung request, want 504", code)
		}
		if got := g.p.Stats().Hung; got != 1 {
			t.Errorf("got %d hung, want 1", got)
		}
		w.open("b")
		if code, _ := b.result(); code != 200 {
			t.Errorf("got %d after the hang, want 200", code)
		}
	})
}

// The Sluice-Timeout budget comes from the request's deadline when it has
// one, and the 504 fires at that deadline.
func TestDeadlineIsTheBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{
			Timeout: time.Minute,
			Classify: func(r *http.Request) admission.Request {
				return admission.Request{Priority: admission.Sheddable, Deadline: time.Now().Add(1500 * time.Millisecond)}
			},
		}, admission.Options{})
		w, _ := g.worker(1)
		start := time.Now()
		code, _ := g.get("/block/a").result()
		if code != http.StatusGatewayTimeout || time.Since(start) != 1500*time.Millisecond {
			t.Errorf("got %d after %v, want 504 after 1.5s", code, time.Since(start))
		}
		h := w.lastHeader()
		if got := h.Get("Sluice-Timeout"); got != "1500" {
			t.Errorf("got Sluice-Timeout %q, want 1500", got)
		}
		if got := h.Get("Sluice-Priority"); got != "sheddable" {
			t.Errorf("got Sluice-Priority %q, want sheddable", got)
		}
	})
}

func TestDrainWaitsForInFlightAndStopsDispatch(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w1, id1 := g.worker(1)
		w2, _ := g.worker(1)

		a := g.get("/block/a") // w1: first added, both idle
		synctest.Wait()
		if got := w1.seen(); len(got) != 1 {
			t.Fatalf("w1 saw %q, want the first request", got)
		}
		a.cancel() // the client's leaving must not end the drain early
		drained := make(chan error, 1)
		go func() { drained <- g.p.Drain(context.Background(), id1) }()
		synctest.Wait()
		select {
		case err := <-drained:
			t.Fatalf("Drain returned %v with a request in flight", err)
		default:
		}
		for range 3 {
			if code, body := g.get("/x").result(); code != 200 || body != "w2 /x" {
				t.Errorf("got %d %q during the drain, want 200 %q", code, body, "w2 /x")
			}
		}
		if got := g.c.Stats().Limit; got != 2 {
			t.Errorf("got limit %d during the drain (1 slot + 1 running), want 2", got)
		}
		w1.open("a")
		synctest.Wait()
		select {
		case err := <-drained:
			if err != nil {
				t.Errorf("Drain: %v", err)
			}
		default:
			t.Fatal("Drain did not return once its request finished")
		}
		if got := g.c.Stats().Limit; got != 1 {
			t.Errorf("got limit %d after the drain, want 1", got)
		}
		if got := len(w2.seen()); got != 3 {
			t.Errorf("w2 served %d, want 3", got)
		}
		st := g.p.Stats()
		if !st.Endpoints[0].Draining || st.Slots != 1 {
			t.Errorf("got draining %v, slots %d; want true, 1", st.Endpoints[0].Draining, st.Slots)
		}
	})
}

func TestDrainReturns(t *testing.T) {
	tests := []struct {
		name string
		run  func(g *rig, id int) error
		want error
	}{
		{"unknown id", func(g *rig, id int) error { return g.p.Drain(context.Background(), 99) }, nil},
		{"idle", func(g *rig, id int) error { return g.p.Drain(context.Background(), id) }, nil},
		{"context done", func(g *rig, id int) error {
			g.get("/block/a")
			synctest.Wait()
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			return g.p.Drain(ctx, id)
		}, context.DeadlineExceeded},
		{"removed meanwhile", func(g *rig, id int) error {
			g.get("/block/a")
			synctest.Wait()
			go func() {
				synctest.Wait()
				g.p.Remove(id)
			}()
			return g.p.Drain(context.Background(), id)
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{}, admission.Options{})
				_, id := g.worker(1)
				if err := tt.run(g, id); !errors.Is(err, tt.want) {
					t.Errorf("got %v, want %v", err, tt.want)
				}
			})
		})
	}
}

func TestRemove(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		_, id1 := g.worker(1)
		w2, id2 := g.worker(1)
		g.p.Remove(id1)
		if code, body := g.get("/x").result(); code != 200 || body != "w2 /x" {
			t.Errorf("got %d %q, want 200 from w2", code, body)
		}
		if !g.p.Ready() {
			t.Error("not ready with one worker left")
		}
		g.p.Remove(id2)
		if g.p.Ready() {
			t.Error("ready with no worker")
		}
		if code, _ := g.get("/y").result(); code != http.StatusServiceUnavailable {
			t.Errorf("got %d with no worker, want 503", code)
		}
		if got := len(w2.seen()); got != 1 {
			t.Errorf("w2 saw %d after its removal, want 1", got)
		}
		if st := g.p.Stats(); st.NoWorker != 1 || len(st.Endpoints) != 0 {
			t.Errorf("got %d no-worker, %d endpoints; want 1, 0", st.NoWorker, len(st.Endpoints))
		}
	})
}

// The Controller's limit is the routable slots plus what still runs on
// workers that left.
func TestLimitFollowsSlots(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		check := func(when string, want int) {
			t.Helper()
			if got := g.c.Stats().Limit; got != want {
				t.Errorf("%s: got limit %d, want %d", when, got, want)
			}
		}
		check("no worker (clamped)", 1)
		_, id1 := g.worker(1)
		check("one worker", 1)
		_, id2 := g.worker(3)
		check("1 + 3 slots", 4)
		g.get("/done").result() // Done feeds the algorithm, whose decision stays under the ceiling
		check("after a completed request", 4)
		g.p.Remove(id1)
		check("removed the first", 3)
		g.p.Remove(id2)
		check("none left (clamped)", 1)
	})
}

// The Controller's algorithm never lifts the limit above the slots: the
// excess waits in the Controller's queue, where it can be shed and
// prioritised, not in a hidden one here; and an algorithm below the slots
// bounds them.
func TestAlgorithmAndSlotsAgree(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{Limit: limit.NewFixed(10)})
		w, _ := g.worker(1)
		g.get("/warm").result() // the algorithm's decision (10) is bounded by the slots (1)
		if got := g.c.Stats().Limit; got != 1 {
			t.Fatalf("got limit %d, want the slots' 1", got)
		}
		a := g.get("/block/a")
		synctest.Wait()
		b := g.get("/b")
		synctest.Wait()
		if got := len(w.seen()); got != 2 {
			t.Fatalf("worker saw %d, want 2 (b must wait)", got)
		}
		if st := g.c.Stats(); st.Queued != 1 {
			t.Fatalf("got %d queued in the Controller, want b there", st.Queued)
		}
		w.open("a")
		a.result()
		if code, _ := b.result(); code != 200 {
			t.Errorf("got %d for b, want 200", code)
		}
		if got := w.peak.Load(); got != 1 {
			t.Errorf("worker peak %d, want 1", got)
		}
		if got := g.p.Stats().SlotWaits; got != 0 {
			t.Errorf("got %d slot waits, want 0", got)
		}

		g2 := newRig(t, proxy.Options{}, admission.Options{Limit: limit.NewFixed(2)})
		g2.worker(3)
		if got := g2.c.Stats().Limit; got != 2 {
			t.Fatalf("got limit %d with 3 slots and an algorithm of 2, want 2", got)
		}
	})
}

// Cold workers get requests only when the warm ones are busy.
func TestSlowStartPrefersWarmWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{SlowStart: 10 * time.Second}, admission.Options{})
		w1, _ := g.worker(1)
		time.Sleep(10 * time.Second)
		w2, _ := g.worker(1) // cold for 10 s
		for range 3 {
			g.get("/x").result()
		}
		if got, got2 := len(w1.seen()), len(w2.seen()); got != 3 || got2 != 0 {
			t.Errorf("warm served %d, cold %d; want 3, 0", got, got2)
		}
		a := g.get("/block/a")
		synctest.Wait()
		g.get("/y").result() // the warm one is busy
		if got := w2.seen(); !slices.Equal(got, []string{"/y"}) {
			t.Errorf("cold saw %q while the warm one was busy, want [/y]", got)
		}
		w1.open("a")
		a.result()
		time.Sleep(10 * time.Second) // both warm now: round robin
		g.get("/z1").result()
		g.get("/z2").result()
		if got := len(w2.seen()); got != 2 {
			t.Errorf("once warm, w2 served %d in total, want 2", got)
		}
	})
}

// The forwarded budget shrinks by the time spent waiting for a slot: the
// worker is told how much of the caller's deadline is really left.
func TestForwardedBudgetShrinksWithQueueing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{
			Timeout: time.Minute,
			Classify: func(r *http.Request) admission.Request {
				return admission.Request{Deadline: time.Now().Add(2 * time.Second)}
			},
		}, admission.Options{})
		w, _ := g.worker(1)
		first := g.get("/block/a") // takes the only slot
		synctest.Wait()
		second := g.get("/block/b") // queued behind it
		time.Sleep(500 * time.Millisecond)
		w.open("a")
		first.result()
		synctest.Wait()
		if got := w.lastHeader().Get("Sluice-Timeout"); got != "1500" {
			t.Errorf("after 500ms in the queue: got Sluice-Timeout %q, want 1500", got)
		}
		w.open("b")
		second.result()
	})
}
