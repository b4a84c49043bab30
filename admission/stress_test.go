package admission_test

import (
	"context"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// TestStressHardLimit races many goroutines through acquire, cancel and
// release while the limit changes, and checks the hard-limit invariant on
// every admission and that no slot leaks.
func TestStressHardLimit(t *testing.T) {
	const (
		workers = 32
		ops     = 400
	)
	c := newController(t, 4, admission.Options{QueueSize: 16, QueueTimeout: 20 * time.Millisecond})
	var (
		active   atomic.Int64 // slots held, counted by the holders
		ceiling  atomic.Int64 // the largest limit ever set: the bound while limits change
		violated atomic.Int64
	)
	ceiling.Store(4)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range ops {
				switch op := rng.IntN(10); {
				case op == 0 && g == 0:
					n := 1 + rng.IntN(8)
					for {
						cur := ceiling.Load()
						if int64(n) <= cur || ceiling.CompareAndSwap(cur, int64(n)) {
							break
						}
					}
					c.SetCeiling(n)
				default:
					ctx, cancel := context.WithCancel(context.Background())
					if op < 3 {
						go cancel() // races the grant
					}
					cost := 1 + rng.IntN(2)
					p, err := c.Acquire(ctx, admission.Request{Cost: cost})
					if err == nil {
						if n := active.Add(int64(cost)); n > ceiling.Load() && n > int64(cost) {
							violated.Add(1)
						}
						active.Add(-int64(cost))
						p.Release()
					}
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if n := violated.Load(); n > 0 {
		t.Errorf("hard limit exceeded %d times", n)
	}
	st := c.Stats()
	if st.Inflight != 0 || st.Queued != 0 {
		t.Fatalf("got %d in flight and %d queued after the run, want 0 and 0 (leak)", st.Inflight, st.Queued)
	}
}

// TestStressConstantLimit checks the strict invariant, in flight <= limit,
// at every admission while the limit does not move.
func TestStressConstantLimit(t *testing.T) {
	const lim = 3
	c := newController(t, lim, admission.Options{QueueSize: 64})
	var active, worst atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				p, err := c.Acquire(context.Background(), admission.Request{})
				if err != nil {
					continue
				}
				n := active.Add(1)
				for w := worst.Load(); n > w && !worst.CompareAndSwap(w, n); w = worst.Load() {
				}
				active.Add(-1)
				p.Release()
			}
		}()
	}
	wg.Wait()
	if w := worst.Load(); w > lim {
		t.Errorf("got %d in flight at once, want at most %d", w, lim)
	}
	if st := c.Stats(); st.Inflight != 0 {
		t.Fatalf("got %d in flight after the run, want 0", st.Inflight)
	}
}

// FuzzController drives random operation sequences (acquire, cancel,
// release, limit changes, time passing, close) under synctest and checks
// the invariants after each step: in flight never exceeds the limit it was
// admitted under, every waiter ends exactly once, nothing leaks.
func FuzzController(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 2, 3, 4, 5, 6, 7})
	f.Add([]byte{0, 0, 9, 0, 0, 0, 3, 3, 8, 1})
	f.Add([]byte{4, 5, 0, 0, 0, 0, 0, 2, 2, 6, 6, 6, 1, 1, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		synctest.Test(t, func(t *testing.T) { runOps(t, ops) })
	})
}

func runOps(t *testing.T, ops []byte) {
	c, err := admission.New(admission.Options{Limit: fixed(2), QueueSize: 3, QueueTimeout: 50 * time.Millisecond,
		MinShare: 0.3, MaxQueuedPerTenant: 2})
	if err != nil {
		t.Fatal(err)
	}
	type pending struct {
		cancel context.CancelFunc
		out    chan result
	}
	var (
		held    []admission.Permit
		waiting []pending
		limit   = 2
		closed  bool
		holding int // slots held by this test
	)
	collect := func() {
		synctest.Wait()
		kept := waiting[:0]
		for _, w := range waiting {
			select {
			case r := <-w.out:
				if r.err == nil {
					held = append(held, r.p)
					holding++
				}
				w.cancel()
			default:
				kept = append(kept, w)
			}
		}
		waiting = kept
	}
	for _, op := range ops {
		switch op % 8 {
		case 0, 1: // acquire, with a priority and tenant from the op's high bits
			ctx, cancel := context.WithCancel(context.Background())
			out := make(chan result, 1)
			req := admission.Request{Priority: admission.Priority(int(op>>3)%4 - 2), Tenant: string(rune('a' + (op>>5)%3))}
			go func() {
				p, err := c.Acquire(ctx, req)
				out <- result{p: p, err: err}
			}()
			waiting = append(waiting, pending{cancel, out})
		case 2: // release the oldest permit
			if len(held) > 0 {
				held[0].Release()
				held = held[1:]
				holding--
			}
		case 3: // cancel the oldest waiter
			if len(waiting) > 0 {
				waiting[0].cancel()
			}
		case 4, 5: // change the limit
			limit = 1 + int(op/8)%4
			c.SetCeiling(limit)
		case 6: // let time pass: queue timeouts fire
			time.Sleep(20 * time.Millisecond)
		case 7:
			if op/8%4 == 0 {
				c.Close()
				closed = true
			}
		}
		collect()
		st := c.Stats()
		if st.Inflight != holding {
			t.Fatalf("controller says %d in flight, the test holds %d", st.Inflight, holding)
		}
		if st.Queued != len(waiting) {
			t.Fatalf("controller says %d queued, %d waiters are blocked", st.Queued, len(waiting))
		}
		if !closed && st.Queued > 0 && st.Inflight < st.Limit {
			t.Fatalf("%d waiting while %d/%d slots are used: a free slot was not handed on", st.Queued, st.Inflight, st.Limit)
		}
	}
	for _, w := range waiting {
		w.cancel()
	}
	collect()
	for _, p := range held {
		p.Release()
	}
	if st := c.Stats(); st.Inflight != 0 {
		t.Fatalf("got %d in flight after releasing everything, want 0", st.Inflight)
	}
	c.Close()
}
