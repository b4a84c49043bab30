package admission_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// newController returns a Controller with a fixed limit and closes it when
// the test ends.
func newController(t *testing.T, lim int, o admission.Options) *admission.Controller {
	t.Helper()
	if o.Limit == nil {
		o.Limit = fixed(lim)
	}
	c, err := admission.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// fixed is a constant limit.Algorithm.
type fixed int

func (f fixed) Limit() int               { return int(f) }
func (f fixed) Observe(limit.Sample) int { return int(f) }
func (f fixed) Tick(limit.Window) int    { return int(f) }

func mustAcquire(t *testing.T, c *admission.Controller) admission.Permit {
	t.Helper()
	p, err := c.Acquire(context.Background(), admission.Request{})
	if err != nil {
		t.Fatalf("Acquire: %v", err)
	}
	return p
}

type result struct {
	id  int
	p   admission.Permit
	err error
	at  time.Duration
}

// enqueue starts Acquire for id in a goroutine and waits until it blocks in
// the queue, so that arrival order is the order of calls.
func enqueue(ctx context.Context, c *admission.Controller, id int, req admission.Request, out chan<- result) {
	start := time.Now()
	go func() {
		p, err := c.Acquire(ctx, req)
		out <- result{id, p, err, time.Since(start)}
	}()
	synctest.Wait()
}

func reasonOf(err error) admission.Reason {
	r, _ := admission.ShedReason(err)
	return r
}

func TestFastPath(t *testing.T) {
	c := newController(t, 3, admission.Options{})
	var ps []admission.Permit
	for range 3 {
		ps = append(ps, mustAcquire(t, c))
	}
	if st := c.Stats(); st.Inflight != 3 || st.Limit != 3 {
		t.Fatalf("got inflight %d limit %d, want 3 and 3", st.Inflight, st.Limit)
	}
	for _, p := range ps {
		p.Release()
	}
	if st := c.Stats(); st.Inflight != 0 || st.Admitted != 3 {
		t.Fatalf("got inflight %d admitted %d, want 0 and 3", st.Inflight, st.Admitted)
	}
}

func TestFIFOOrderAndDirectHandOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{})
		held := mustAcquire(t, c)
		out := make(chan result, 3)
		for id := 1; id <= 3; id++ {
			enqueue(context.Background(), c, id, admission.Request{}, out)
		}
		if got := c.Stats().Queued; got != 3 {
			t.Fatalf("got %d queued, want 3", got)
		}
		held.Release()
		// The freed slot went to the head waiter, not back to a pool: a
		// newcomer cannot take it, even before the waiter has run.
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.Acquire(ctx, admission.Request{}); !errors.Is(err, context.Canceled) {
			t.Fatalf("newcomer after hand-off: got %v, want it to queue (context.Canceled)", err)
		}
		for want := 1; want <= 3; want++ {
			r := <-out
			if r.err != nil || r.id != want {
				t.Fatalf("got waiter %d (err %v), want waiter %d granted", r.id, r.err, want)
			}
			r.p.Release()
		}
		st := c.Stats()
		if st.Inflight != 0 || st.Queued != 0 || st.AdmittedAfterWait != 3 {
			t.Fatalf("got %+v, want nothing in flight or queued and 3 admitted after waiting", st)
		}
	})
}

func TestNewcomerDoesNotOvertakeWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{})
		// A dear waiter (cost 2) cannot fit under limit 2 while one slot is
		// held; a cheap newcomer that would fit must still queue behind it.
		c.SetCeiling(2)
		held := mustAcquire(t, c)
		out := make(chan result, 2)
		enqueue(context.Background(), c, 1, admission.Request{Cost: 2}, out)
		enqueue(context.Background(), c, 2, admission.Request{}, out)
		if st := c.Stats(); st.Inflight != 1 || st.Queued != 2 {
			t.Fatalf("got inflight %d queued %d, want 1 and 2", st.Inflight, st.Queued)
		}
		held.Release()
		r := <-out
		if r.id != 1 || r.err != nil {
			t.Fatalf("got waiter %d (%v) first, want waiter 1", r.id, r.err)
		}
		r.p.Release()
		r = <-out
		if r.id != 2 || r.err != nil {
			t.Fatalf("got waiter %d (%v), want waiter 2", r.id, r.err)
		}
		r.p.Release()
	})
}

func TestQueueTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{QueueTimeout: 5 * time.Second})
		held := mustAcquire(t, c)
		defer held.Release()
		out := make(chan result, 1)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		r := <-out
		if reasonOf(r.err) != admission.ReasonQueueTimeout {
			t.Fatalf("got %v, want shed queue-timeout", r.err)
		}
		if r.at != 5*time.Second {
			t.Fatalf("shed after %v, want 5s", r.at)
		}
		if st := c.Stats(); st.Queued != 0 || st.Shed[admission.ReasonQueueTimeout] != 1 {
			t.Fatalf("got queued %d, shed %v, want 0 queued and one queue-timeout", st.Queued, st.Shed)
		}
	})
}

func TestCancelWhileQueuedIsSilent(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{})
		held := mustAcquire(t, c)
		ctx, cancel := context.WithCancel(context.Background())
		out := make(chan result, 1)
		enqueue(ctx, c, 1, admission.Request{}, out)
		cancel()
		r := <-out
		if !errors.Is(r.err, context.Canceled) {
			t.Fatalf("got %v, want context.Canceled", r.err)
		}
		held.Release()
		st := c.Stats()
		if st.Inflight != 0 || st.Queued != 0 || st.Cancelled != 1 {
			t.Fatalf("got %+v, want the slot free, queue empty, one cancelled", st)
		}
		for reason, n := range st.Shed {
			if n != 0 {
				t.Errorf("a cancelled waiter counted as shed %s", admission.Reason(reason))
			}
		}
	})
}

// A waiter cancelled and granted in the same instant (its context is done,
// and before it runs to leave the queue a release hands it the slot) gives
// the slot on to the next waiter instead of leaking it.
func TestGrantCancelRace(t *testing.T) {
	// One P: the test goroutine runs on from cancel to Release before the
	// waiter wakes, so the waiter wakes for its context but finds a grant.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	for range 20 {
		synctest.Test(t, func(t *testing.T) {
			c := newController(t, 1, admission.Options{})
			held := mustAcquire(t, c)
			ctx, cancel := context.WithCancel(context.Background())
			out := make(chan result, 2)
			enqueue(ctx, c, 1, admission.Request{}, out)
			enqueue(context.Background(), c, 2, admission.Request{}, out)
			cancel()
			held.Release() // grants waiter 1, which is already cancelled
			r := <-out
			if r.id != 1 || !errors.Is(r.err, context.Canceled) {
				t.Fatalf("got waiter %d with %v, want waiter 1 cancelled", r.id, r.err)
			}
			r = <-out
			if r.id != 2 || r.err != nil {
				t.Fatalf("got waiter %d (%v), want waiter 2 granted: the slot leaked", r.id, r.err)
			}
			r.p.Release()
			if st := c.Stats(); st.Inflight != 0 {
				t.Fatalf("got %d in flight at the end, want 0", st.Inflight)
			}
		})
	}
}

func TestShrinkAndGrow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 3, admission.Options{})
		c.SetCeiling(2)
		a, b := mustAcquire(t, c), mustAcquire(t, c)
		out := make(chan result, 3)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		c.SetCeiling(1)
		a.Release() // in flight 1 = limit 1: nobody may enter
		synctest.Wait()
		if st := c.Stats(); st.Inflight != 1 || st.Queued != 1 {
			t.Fatalf("after shrink: got inflight %d queued %d, want 1 and 1", st.Inflight, st.Queued)
		}
		b.Release()
		r := <-out
		if r.err != nil {
			t.Fatalf("got %v, want waiter admitted once below the limit", r.err)
		}
		enqueue(context.Background(), c, 2, admission.Request{}, out)
		enqueue(context.Background(), c, 3, admission.Request{}, out)
		c.SetCeiling(3) // growth admits both waiters at once
		for range 2 {
			if g := <-out; g.err != nil {
				t.Fatalf("after grow: got %v, want granted", g.err)
			} else {
				defer g.p.Release()
			}
		}
		r.p.Release()
	})
}

type signal float64

func (s *signal) Saturation() float64 { return float64(*s) }

func TestSaturationBypassesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sat := signal(0.99)
		c := newController(t, 1, admission.Options{Signal: &sat})
		// Under the limit the fast path admits whatever the signal says.
		held := mustAcquire(t, c)
		_, err := c.Acquire(context.Background(), admission.Request{})
		if reasonOf(err) != admission.ReasonSaturated {
			t.Fatalf("saturated: got %v, want shed saturated", err)
		}
		if st := c.Stats(); st.Queued != 0 || st.Saturation != 0.99 {
			t.Fatalf("got queued %d saturation %v, want 0 and 0.99", st.Queued, st.Saturation)
		}
		sat = 0.5
		out := make(chan result, 1)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		if got := c.Stats().Queued; got != 1 {
			t.Fatalf("unsaturated: got %d queued, want 1", got)
		}
		held.Release()
		(<-out).p.Release()
	})
}

// With CoDel, saturation refuses waiting only while the queue is judged
// standing: at about capacity a CPU-bound process is saturated nearly all
// the time, and a request that found the slots full in a burst is served
// from a calm queue a moment later rather than shed.
func TestSaturationWithCoDelShedsOnlyAStandingQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sat := signal(0.99)
		c := newController(t, 1, admission.Options{Signal: &sat, CoDelTarget: 5 * time.Millisecond, SampleWindow: -1})
		held := mustAcquire(t, c)
		out := make(chan result, 2)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		enqueue(context.Background(), c, 2, admission.Request{}, out)
		if st := c.Stats(); st.Queued != 2 || st.Shed.Total() != 0 {
			t.Fatalf("saturated, calm: got queued %d shed %d, want 2 and 0", st.Queued, st.Shed.Total())
		}
		// Past the calm sojourn (250 ms) with two waiting, the next
		// dispatch judges the queue standing.
		time.Sleep(300 * time.Millisecond)
		held.Release()
		first := <-out
		if first.err != nil || first.id != 1 {
			t.Fatalf("got %d: %v, want 1 granted", first.id, first.err)
		}
		if _, err := c.Acquire(context.Background(), admission.Request{}); reasonOf(err) != admission.ReasonSaturated {
			t.Fatalf("saturated, queue standing: got %v, want shed saturated", err)
		}
		first.p.Release()
		(<-out).p.Release()
	})
}

func TestQueueFullAndNoQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{QueueSize: 2})
		held := mustAcquire(t, c)
		out := make(chan result, 2)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		enqueue(context.Background(), c, 2, admission.Request{}, out)
		if _, err := c.Acquire(context.Background(), admission.Request{}); reasonOf(err) != admission.ReasonQueueFull {
			t.Fatalf("got %v, want shed queue-full", err)
		}
		held.Release()
		(<-out).p.Release()
		(<-out).p.Release()

		n := newController(t, 1, admission.Options{QueueSize: -1})
		p := mustAcquire(t, n)
		defer p.Release()
		if _, err := n.Acquire(context.Background(), admission.Request{}); reasonOf(err) != admission.ReasonLimit {
			t.Fatalf("no queue: got %v, want shed limit", err)
		}
	})
}

func TestClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{})
		held := mustAcquire(t, c)
		out := make(chan result, 2)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		enqueue(context.Background(), c, 2, admission.Request{}, out)
		c.Close()
		for range 2 {
			r := <-out
			if reasonOf(r.err) != admission.ReasonShutdown || !errors.Is(r.err, admission.ErrClosed) {
				t.Fatalf("queued at close: got %v, want shed shutdown (ErrClosed)", r.err)
			}
		}
		held.Release() // a permit granted before Close stays valid
		if _, err := c.Acquire(context.Background(), admission.Request{}); reasonOf(err) != admission.ReasonShutdown {
			t.Fatalf("after close: got %v, want shed shutdown", err)
		}
		if st := c.Stats(); st.Inflight != 0 || st.Shed[admission.ReasonShutdown] != 3 {
			t.Fatalf("got %+v, want nothing in flight and 3 shutdown sheds", st)
		}
		c.Close() // idempotent
	})
}

func TestCostlierThanLimitRunsAlone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 2, admission.Options{})
		p, err := c.Acquire(context.Background(), admission.Request{Cost: 5})
		if err != nil {
			t.Fatalf("idle controller: got %v, want a cost-5 request admitted alone", err)
		}
		out := make(chan result, 1)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		if got := c.Stats().Queued; got != 1 {
			t.Fatalf("got %d queued behind the dear request, want 1", got)
		}
		p.Release()
		(<-out).p.Release()
	})
}

// scripted is a limit.Algorithm that records what it is fed.
type scripted struct {
	mu      sync.Mutex
	limit   int
	samples []limit.Sample
	windows []limit.Window
	next    func() int
}

func (s *scripted) Limit() int { s.mu.Lock(); defer s.mu.Unlock(); return s.limit }
func (s *scripted) Observe(x limit.Sample) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.samples = append(s.samples, x)
	return s.limit
}
func (s *scripted) Tick(w limit.Window) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.windows = append(s.windows, w)
	s.limit = s.next()
	return s.limit
}

func TestAlgorithmIsFedAndObeyed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sat := signal(0.7)
		limits := []int{4, 2}
		alg := &scripted{limit: 1, next: func() int { l := limits[0]; limits = limits[1:]; return l }}
		c := newController(t, 0, admission.Options{Limit: alg, Signal: &sat, SampleWindow: time.Second, SmoothingFactor: 0.5})
		p := mustAcquire(t, c)
		p.DoneSample(limit.Sample{Now: time.Now(), RTT: 100 * time.Millisecond})
		p = mustAcquire(t, c)
		p.DoneSample(limit.Sample{Now: time.Now(), RTT: 200 * time.Millisecond})
		if got := c.Stats().Latency; got != 150*time.Millisecond {
			t.Fatalf("smoothed latency: got %v, want 150ms (EWMA 0.5 of 100ms, 200ms)", got)
		}
		held := mustAcquire(t, c)
		time.Sleep(time.Second)
		synctest.Wait()
		if got := c.Stats().Limit; got != 4 {
			t.Fatalf("after first window: got limit %d, want 4", got)
		}
		alg.mu.Lock()
		w, n := alg.windows[0], len(alg.samples)
		alg.mu.Unlock()
		if w.Saturation != 0.7 || w.Inflight != 1 || w.PeakInflight != 1 || n != 2 {
			t.Fatalf("got window %+v and %d samples, want saturation 0.7, inflight 1, 2 samples", w, n)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := c.Stats().Limit; got != 2 {
			t.Fatalf("after second window: got limit %d, want 2", got)
		}
		held.Release()
	})
}

func TestStatsCountsEveryOutcome(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{QueueSize: 1, QueueTimeout: time.Second})
		held := mustAcquire(t, c)
		out := make(chan result, 1)
		enqueue(context.Background(), c, 1, admission.Request{}, out)
		c.Acquire(context.Background(), admission.Request{}) // queue-full
		<-out                                                // queue-timeout
		held.Release()
		st := c.Stats()
		if st.Admitted != 1 || st.Shed[admission.ReasonQueueFull] != 1 || st.Shed[admission.ReasonQueueTimeout] != 1 {
			t.Fatalf("got %+v, want 1 admitted, 1 queue-full, 1 queue-timeout", st)
		}
	})
}

func TestStatsSaturationUnknown(t *testing.T) {
	sat := signal(math.NaN())
	c := newController(t, 1, admission.Options{Signal: &sat})
	if got := c.Stats().Saturation; got != -1 {
		t.Fatalf("got saturation %v while the signal has no value, want -1 (NaN does not encode to JSON)", got)
	}
}

// The two log records an operator reads without a metrics stack: the limit
// changed, and how many requests were shed in the window.
func TestWindowLogs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf bytes.Buffer
		log := slog.New(slog.NewJSONHandler(&buf, nil))
		limits := []int{3}
		alg := &scripted{limit: 1, next: func() int { l := limits[0]; limits = limits[1:]; return l }}
		c := newController(t, 0, admission.Options{Limit: alg, QueueSize: -1, Logger: log})
		held := mustAcquire(t, c)
		c.Acquire(context.Background(), admission.Request{}) // shed: limit
		time.Sleep(time.Second)
		synctest.Wait()
		held.Release()
		out := buf.String()
		for _, want := range []string{`"msg":"admission: limit changed","from":1,"to":3`, `"msg":"admission: shed requests in the last window","shed":{"limit":1}`} {
			if !strings.Contains(out, want) {
				t.Errorf("logs lack %s:\n%s", want, out)
			}
		}
	})
}
