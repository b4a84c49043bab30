package supervisor

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// order returns the events of worker id, in order.
func order(events []string, id int) []string {
	suffix := " " + strconv.Itoa(id)
	var out []string
	for _, e := range events {
		if len(e) > len(suffix) && e[len(e)-len(suffix):] == suffix {
			out = append(out, e[:len(e)-len(suffix)])
		}
	}
	return out
}

func TestShutdownDrainsThenTermsThenKills(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, StopTimeout: 10 * time.Second}, func(f *fakeEnv) { f.ignoreTerm = true })
		h.rec.take()
		h.bal.hold = true
		began := time.Now()
		done := make(chan error, 1)
		go func() { done <- h.sup.Shutdown(context.Background()) }()
		synctest.Wait()
		if h.sup.Ready() {
			t.Errorf("Ready during Shutdown: got true, want false")
		}
		// Both drain in parallel; neither is signalled while draining.
		if got := h.rec.take(); !slices.Equal(sorted(got), []string{"drain 1", "drain 2"}) {
			t.Fatalf("events while draining: got %q, want drain 1 and drain 2 only", got)
		}
		time.Sleep(3 * time.Second)
		h.bal.release(1)
		h.bal.release(2)
		synctest.Wait()
		termed := time.Now()
		events := h.rec.take()
		for _, id := range []int{1, 2} {
			if got, want := order(events, id), []string{"drained", "term"}; !slices.Equal(got, want) {
				t.Errorf("worker %d after drain: got %q, want %q", id, got, want)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("Shutdown returned %v while workers ignore SIGTERM", err)
		default:
		}
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if got, want := time.Since(termed), 10*time.Second; got != want {
			t.Errorf("SIGKILL after SIGTERM: got %v, want StopTimeout %v", got, want)
		}
		events = h.rec.take()
		for _, id := range []int{1, 2} {
			if got, want := order(events, id), []string{"kill", "exit", "remove"}; !slices.Equal(got, want) {
				t.Errorf("worker %d at StopTimeout: got %q, want %q", id, got, want)
			}
		}
		if got := time.Since(began); got != 13*time.Second {
			t.Errorf("Shutdown took %v, want 13s (3s drain + 10s StopTimeout)", got)
		}
	})
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestShutdownKillsAtContextDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, StopTimeout: 10 * time.Second}, func(f *fakeEnv) { f.ignoreTerm = true })
		h.rec.take()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		began := time.Now()
		err := h.sup.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: got %v, want context.DeadlineExceeded", err)
		}
		if got := time.Since(began); got != 3*time.Second {
			t.Errorf("Shutdown took %v, want 3s (ctx's deadline)", got)
		}
		h.wantEvents("drain 1", "term 1", "kill 1", "exit 1", "remove 1")
	})
}

func TestShutdownBeforeReadyStopsStartingWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1}, func(f *fakeEnv) { f.notReadyAll = true })
		h.rec.take()
		if err := h.sup.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		h.wantEvents("term 1", "exit 1") // never Added: no drain, no remove
	})
}

func TestRunCancelStopsWorkersWithoutDrain(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1}, nil)
		h.rec.take()
		h.stop()
		h.wantEvents("term 1", "exit 1", "remove 1")
		if h.sup.Ready() {
			t.Errorf("Ready after Run returned: got true, want false")
		}
	})
}

func TestRunAfterShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Count: 1}, nil)
		if err := h.sup.Shutdown(context.Background()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := h.sup.Run(context.Background()); !errors.Is(err, ErrStopped) {
			t.Errorf("Run after Shutdown: got %v, want ErrStopped", err)
		}
		if err := h.sup.Run(context.Background()); err == nil {
			t.Errorf("second Run: got nil, want an error")
		}
		h.wantEvents() // nothing was started
	})
}

func TestCrashDuringShutdownIsNotRestarted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1}, nil)
		h.rec.take()
		h.bal.hold = true
		done := make(chan error, 1)
		go func() { done <- h.sup.Shutdown(context.Background()) }()
		synctest.Wait()
		h.env.proc(1).crash(errors.New("exit status 1"))
		synctest.Wait()
		h.bal.release(1)
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		time.Sleep(time.Hour)
		synctest.Wait()
		h.wantEvents("drain 1", "exit 1", "remove 1", "drained 1")
		if got := h.sup.Stats().Exits; got != 0 {
			t.Errorf("Exits: got %d, want 0 (the exit was expected)", got)
		}
	})
}

func TestSignalReachesEveryWorker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2}, nil)
		h.rec.take()
		if got := h.sup.Signal(syscall.SIGUSR2); got != 2 {
			t.Errorf("Signal: got %d workers, want 2", got)
		}
		if got := sorted(h.rec.take()); !slices.Equal(got, []string{"signal 1 " + syscall.SIGUSR2.String(), "signal 2 " + syscall.SIGUSR2.String()}) {
			t.Errorf("events: got %q", got)
		}
	})
}
