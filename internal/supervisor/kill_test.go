package supervisor

import (
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// A worker killed with Kill (the proxy found it hung) gets SIGKILL, not
// SIGTERM, is Removed, and its slot restarts after the backoff like any
// unexpected exit; its exit names the reason.
func TestKillRestartsTheSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, BackoffJitter: -1}, nil)
		h.rec.take()
		if !h.sup.Kill(1, "hung") {
			t.Fatal("Kill(1) reported false for a live worker")
		}
		if h.sup.Kill(1, "hung") {
			t.Error("a second Kill(1) reported true, want false")
		}
		synctest.Wait()
		h.wantEvents("kill 1", "exit 1", "remove 1")
		st := h.sup.Stats()
		if st.Exits != 1 {
			t.Errorf("got %d unexpected exits, want 1", st.Exits)
		}
		if i := slices.IndexFunc(st.Workers, func(w WorkerInfo) bool { return w.ID == 1 }); i < 0 || !strings.HasPrefix(st.Workers[i].Exit, "killed: hung") {
			t.Errorf("worker 1 in stats: %+v, want its exit to say killed: hung", st.Workers)
		}
		time.Sleep(DefaultBackoffMin)
		synctest.Wait()
		if got := h.current(0); got != 2 {
			t.Errorf("slot 0 runs worker %d after the backoff, want 2", got)
		}
		if h.sup.Kill(1, "hung") || h.sup.Kill(99, "hung") {
			t.Error("Kill of an exited or unknown worker reported true")
		}
	})
}

// Kill during a drain cuts the wait for StopTimeout: the worker is hung.
func TestKillDuringDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, StopTimeout: time.Hour}, func(f *fakeEnv) { f.ignoreTerm = true })
		h.bal.hold = true
		done := make(chan error, 1)
		go func() { done <- h.sup.RollingRestart(t.Context()) }()
		synctest.Wait()
		h.bal.release(1)
		synctest.Wait()
		h.rec.take()
		start := time.Now()
		if !h.sup.Kill(1, "hung") {
			t.Fatal("Kill of a stopping worker reported false")
		}
		if err := <-done; err != nil {
			t.Fatalf("RollingRestart: %v", err)
		}
		if took := time.Since(start); took != 0 {
			t.Errorf("the stop took %v after Kill, want none (StopTimeout is an hour)", took)
		}
		if st := h.sup.Stats(); st.Exits != 0 {
			t.Errorf("got %d unexpected exits, want 0: sluice was stopping it", st.Exits)
		}
	})
}
