package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// Under RollSurge (the default) each slot's replacement starts beside its
// worker, which is drained and stopped once the replacement is Added;
// under RollReplace each worker is drained and stopped first, then its
// replacement started, while the other slot's worker serves.
func TestRollModes(t *testing.T) {
	for _, tc := range []struct {
		name string
		roll RollMode
		want []string
	}{
		{"default", "", []string{
			"start 3", "add 3", "drain 1", "term 1", "exit 1", "remove 1",
			"start 4", "add 4", "drain 2", "term 2", "exit 2", "remove 2"}},
		{"replace", RollReplace, []string{
			"drain 1", "term 1", "exit 1", "remove 1", "start 3", "add 3",
			"drain 2", "term 2", "exit 2", "remove 2", "start 4", "add 4"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startHarness(t, Options{Count: 2, Roll: tc.roll}, nil)
				h.rec.take()
				if err := h.sup.RollingRestart(t.Context()); err != nil {
					t.Fatal(err)
				}
				synctest.Wait()
				h.wantEvents(tc.want...)
				if st := h.sup.Stats(); !st.Ready || len(st.Workers) != 2 {
					t.Errorf("after the roll: ready %v, %d workers; want ready, 2 (%+v)", st.Ready, len(st.Workers), st.Workers)
				}
			})
		})
	}
}

// A slot is replaced only while another worker is ready: a lone worker,
// or one whose neighbour is not serving, surges whatever Roll says, so that
// a roll never leaves no worker.
func TestRollReplaceKeepsAWorkerServing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, Roll: RollReplace}, nil)
		h.rec.take()
		if err := h.sup.RollingRestart(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		h.wantEvents("start 2", "add 2", "drain 1", "term 1", "exit 1", "remove 1")
	})
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, Roll: RollReplace, BackoffJitter: -1,
			BackoffMin: time.Hour, BackoffMax: time.Hour}, nil)
		// Slot 1's worker crashed and waits out its backoff: slot 0's
		// worker is the only one serving, and surges; slot 1's is
		// replaced by then.
		h.env.proc(2).crash(errors.New("exit status 1"))
		synctest.Wait()
		h.rec.take()
		if err := h.sup.RollingRestart(t.Context()); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		h.wantEvents("start 3", "add 3", "drain 1", "term 1", "exit 1", "remove 1", "start 4", "add 4")
	})
}

// A replacement that fails after its slot's worker was stopped first is
// restarted as after a crash, so the slot does not stand empty; the roll
// stops there and says why.
func TestRollReplaceFailedReplacementRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, Roll: RollReplace, BackoffJitter: -1}, nil)
		h.rec.take()
		h.env.mu.Lock()
		h.env.notReady[3] = true // slot 0's replacement never becomes ready
		h.env.mu.Unlock()
		done := make(chan error, 1)
		go func() { done <- h.sup.RollingRestart(t.Context()) }()
		synctest.Wait()
		h.env.proc(3).crash(errors.New("exit status 1"))
		synctest.Wait()
		if err := <-done; err == nil {
			t.Fatal("RollingRestart: got nil error, want the replacement's failure")
		}
		if h.logs.count(slog.LevelWarn, "worker exited; restarting") != 1 {
			t.Errorf("the failed replacement: want it restarted as after a crash")
		}
		// After the backoff (100 ms), a new worker for slot 0.
		time.Sleep(DefaultBackoffMin)
		synctest.Wait()
		if got := h.current(0); got != 4 {
			t.Fatalf("slot 0's worker: got %d, want 4, the failed replacement's successor", got)
		}
		synctest.Wait()
		if st := h.sup.Stats(); !st.Ready || len(st.Workers) != 2 {
			t.Errorf("after the restart: ready %v, %d workers; want ready, 2 (%+v)", st.Ready, len(st.Workers), st.Workers)
		}
	})
}

// A replaced slot's new worker is the slot's own from its start: when
// ctx ends while it starts, RollingRestart returns ctx's error and the
// worker goes on starting, rather than being stopped as a surging slot's
// replacement is, which would leave the slot empty.
func TestRollReplaceCancelledKeepsStarting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, Roll: RollReplace}, func(f *fakeEnv) { f.notReady[3] = true })
		h.rec.take()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := h.sup.RollingRestart(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("RollingRestart: got %v, want context.DeadlineExceeded", err)
		}
		h.wantEvents("drain 1", "term 1", "exit 1", "remove 1", "start 3")
		h.env.setReady(3, true)
		time.Sleep(DefaultReadyInterval)
		synctest.Wait()
		h.wantEvents("add 3")
		if got := stateOf(h.sup, 3); got != StateReady {
			t.Errorf("worker 3: got %v, want ready", got)
		}
	})
}

// With Options.Settled, a roll's next slot begins only once Settled has
// reported true at two polls in a row (the front's backlog served), or
// after SettleMax; the first slot does not wait, and a ctx that ends
// while the roll waits ends it, as a shutdown does at once.
func TestRollSettlesBetweenSlots(t *testing.T) {
	second := []string{"start 4", "add 4", "drain 2", "term 2", "exit 2", "remove 2"}
	never := func() bool { return false }
	t.Run("settled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			var settled atomic.Bool
			h, done := rollToTheWait(t, t.Context(), settled.Load)
			// Polls fall at SettlePoll multiples from the wait's start:
			// sleep to between two.
			time.Sleep(time.Second + SettlePoll/2)
			synctest.Wait()
			h.wantEvents()
			settled.Store(true)
			time.Sleep(SettlePoll)
			synctest.Wait()
			h.wantEvents() // one calm poll is not two
			time.Sleep(SettlePoll)
			synctest.Wait()
			h.wantEvents(second...)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("a backlog that lasts", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, done := rollToTheWait(t, t.Context(), never)
			time.Sleep(SettleMax - SettlePoll/2)
			synctest.Wait()
			h.wantEvents()
			time.Sleep(SettlePoll)
			synctest.Wait()
			h.wantEvents(second...)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		})
	})
	t.Run("cancelled", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			h, done := rollToTheWait(t, ctx, never)
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("RollingRestart = %v, want context.Canceled", err)
			}
			synctest.Wait()
			h.wantEvents() // slot 1 keeps its worker
		})
	})
	t.Run("shut down", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			h, done := rollToTheWait(t, t.Context(), never)
			stopped := time.Now()
			h.stop()
			if err := <-done; !errors.Is(err, ErrStopped) {
				t.Fatalf("RollingRestart = %v, want ErrStopped", err)
			}
			if waited := time.Since(stopped); waited != 0 {
				t.Errorf("RollingRestart returned %v after the shutdown, want at once", waited)
			}
		})
	})
}

// rollToTheWait starts two workers with settled as Options.Settled, and a
// RollingRestart under ctx, whose error done receives; it returns once
// the first slot is replaced and the roll waits before the second.
func rollToTheWait(t *testing.T, ctx context.Context, settled func() bool) (*harness, chan error) {
	t.Helper()
	h := startHarness(t, Options{Count: 2, Settled: settled}, nil)
	h.rec.take()
	done := make(chan error, 1)
	go func() { done <- h.sup.RollingRestart(ctx) }()
	synctest.Wait()
	h.wantEvents("start 3", "add 3", "drain 1", "term 1", "exit 1", "remove 1")
	return h, done
}
