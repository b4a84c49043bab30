package supervisor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestRollingRestartOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, WarmupRequests: 1}, nil)
		h.rec.take()
		h.bal.hold = true
		done := make(chan error, 1)
		go func() { done <- h.sup.RollingRestart(context.Background()) }()
		synctest.Wait()
		// Worker 1 drains: nothing else may happen until its requests finish.
		h.wantEvents("start 3", "warm 3 /", "add 3", "drain 1")
		if got := stateOf(h.sup, 1); got != StateDraining {
			t.Errorf("worker 1 while draining: got %v, want draining", got)
		}
		if !h.sup.Ready() {
			t.Errorf("Ready during rolling restart: got false, want true")
		}
		h.bal.release(1)
		synctest.Wait()
		h.wantEvents("drained 1", "term 1", "exit 1", "remove 1", "start 4", "warm 4 /", "add 4", "drain 2")
		h.bal.release(2)
		if err := <-done; err != nil {
			t.Fatalf("RollingRestart: %v", err)
		}
		h.wantEvents("drained 2", "term 2", "exit 2", "remove 2")

		st := h.sup.Stats()
		var ids []int
		for _, w := range st.Workers {
			ids = append(ids, w.ID)
			if w.State != StateReady || w.Restarts != 0 {
				t.Errorf("worker %d after restart: got %v with %d restarts, want ready with 0", w.ID, w.State, w.Restarts)
			}
		}
		if len(ids) != 2 || ids[0] != 3 || ids[1] != 4 {
			t.Errorf("workers after restart: got %v, want [3 4]", ids)
		}
		// The old workers' exits were expected: nothing restarts them.
		time.Sleep(time.Hour)
		synctest.Wait()
		h.wantEvents()
	})
}

func stateOf(s *Supervisor, id int) State {
	for _, w := range s.Stats().Workers {
		if w.ID == id {
			return w.State
		}
	}
	return -1
}

func TestRollingRestartRejectsConcurrentCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1}, nil)
		h.bal.hold = true
		done := make(chan error, 1)
		go func() { done <- h.sup.RollingRestart(context.Background()) }()
		synctest.Wait()
		if err := h.sup.RollingRestart(context.Background()); !errors.Is(err, ErrRestarting) {
			t.Errorf("second RollingRestart: got %v, want ErrRestarting", err)
		}
		h.bal.release(1)
		if err := <-done; err != nil {
			t.Errorf("first RollingRestart: got %v, want nil", err)
		}
		h.bal.hold = false
		if err := h.sup.RollingRestart(context.Background()); err != nil {
			t.Errorf("RollingRestart after the first ended: got %v, want nil", err)
		}
	})
}

func TestRollingRestartKeepsOldWorkerWhenReplacementFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, StartTimeout: 5 * time.Second}, func(f *fakeEnv) { f.notReady[3] = true })
		h.rec.take()
		err := h.sup.RollingRestart(context.Background())
		if err == nil || !strings.Contains(err.Error(), "slot 0") || !strings.Contains(err.Error(), "not ready within 5s") {
			t.Fatalf("RollingRestart: got %v, want an error naming slot 0 and the start timeout", err)
		}
		h.wantEvents("start 3", "kill 3", "exit 3")
		time.Sleep(time.Hour)
		synctest.Wait()
		h.wantEvents() // the failed replacement is not restarted, worker 1 not drained
		if got := stateOf(h.sup, 1); got != StateReady {
			t.Errorf("worker 1: got %v, want ready", got)
		}
	})
}

func TestRollingRestartCancelledStopsReplacement(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1}, func(f *fakeEnv) { f.notReady[2] = true })
		h.rec.take()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := h.sup.RollingRestart(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("RollingRestart: got %v, want context.DeadlineExceeded", err)
		}
		h.wantEvents("start 2", "term 2", "exit 2")
		if got := stateOf(h.sup, 1); got != StateReady {
			t.Errorf("worker 1: got %v, want ready", got)
		}
	})
}

// A worker that crashes while its replacement starts is restarted as usual;
// the replacement then retires that restarted worker: one worker per slot.
func TestRollingRestartWithOldWorkerCrashing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, BackoffJitter: -1}, func(f *fakeEnv) { f.notReady[2] = true })
		h.rec.take()
		done := make(chan error, 1)
		go func() { done <- h.sup.RollingRestart(context.Background()) }()
		synctest.Wait()
		h.env.proc(1).crash(errors.New("exit status 1"))
		time.Sleep(DefaultBackoffMin)
		synctest.Wait()
		h.wantEvents("start 2", "exit 1", "remove 1", "start 3", "add 3")
		h.env.setReady(2, true)
		if err := <-done; err != nil {
			t.Fatalf("RollingRestart: %v", err)
		}
		h.wantEvents("add 2", "drain 3", "term 3", "exit 3", "remove 3")
		st := h.sup.Stats()
		if len(st.Workers) != 1 || st.Workers[0].ID != 2 || st.Workers[0].State != StateReady {
			t.Errorf("workers: got %+v, want only worker 2, ready", st.Workers)
		}
	})
}

func TestRollingRestartStates(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Count: 1}, nil)
		if err := h.sup.RollingRestart(context.Background()); !errors.Is(err, ErrNotRunning) {
			t.Errorf("before Run: got %v, want ErrNotRunning", err)
		}
		h.run()
		if err := h.sup.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := h.sup.RollingRestart(context.Background()); !errors.Is(err, ErrStopped) {
			t.Errorf("after Shutdown: got %v, want ErrStopped", err)
		}
	})
}
