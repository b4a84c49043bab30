package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

func TestCrashLoopStopsRestarts(t *testing.T) {
	tests := []struct {
		name     string
		up       time.Duration // how long each worker serves before crashing
		wait     time.Duration // how long to wait for each restart
		crashes  int
		wantLoop bool
	}{
		{"4 fast crashes with a limit of 3", 0, 2 * time.Second, 4, true},
		{"3 fast crashes with a limit of 3", 0, 2 * time.Second, 3, false},
		{"crashes spread beyond the window", 25 * time.Second, DefaultBackoffMax + time.Second, 8, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startHarness(t, Options{
					Count: 1, CrashLoopExits: 3, CrashLoopWindow: time.Minute, BackoffJitter: -1,
					StableAfter: time.Hour,
				}, nil)
				for i := range tt.crashes {
					gap := crashAndMeasure(h, tt.up, tt.wait)
					if restarted := gap >= 0; restarted == (tt.wantLoop && i == tt.crashes-1) {
						t.Fatalf("crash %d: restarted %v", i+1, restarted)
					}
				}
				time.Sleep(time.Hour)
				synctest.Wait()
				st := h.sup.Stats()
				if st.CrashLooping != tt.wantLoop || st.Ready == tt.wantLoop || h.sup.Ready() == tt.wantLoop {
					t.Errorf("got crashLooping %v ready %v, want %v %v", st.CrashLooping, st.Ready, tt.wantLoop, !tt.wantLoop)
				}
				if st.Exits != tt.crashes {
					t.Errorf("Exits: got %d, want %d", st.Exits, tt.crashes)
				}
				wantErrors := 0
				if tt.wantLoop {
					wantErrors = 1
				}
				if got := h.logs.count(slog.LevelError, "crash-looping"); got != wantErrors {
					t.Errorf("crash-loop errors logged: got %d, want %d", got, wantErrors)
				}
			})
		})
	}
}

func TestCrashLoopCountsEverySlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Default limit: 5 x Count = 10 exits in 60 s.
		h := startHarness(t, Options{Count: 2, BackoffJitter: -1}, nil)
		for i := range 11 {
			slot := i % 2
			h.env.proc(h.current(slot)).crash(errors.New("exit status 1"))
			time.Sleep(time.Millisecond)
			synctest.Wait()
			if got, want := h.sup.Stats().CrashLooping, i == 10; got != want {
				t.Fatalf("after %d exits: crashLooping got %v, want %v", i+1, got, want)
			}
			time.Sleep(2 * time.Second) // past the restart delay
			synctest.Wait()
		}
	})
}

func TestRollingRestartEndsCrashLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, CrashLoopExits: 1, BackoffJitter: -1}, nil)
		h.env.proc(1).crash(errors.New("exit status 1"))
		h.env.proc(2).crash(errors.New("exit status 1"))
		time.Sleep(time.Hour)
		synctest.Wait()
		if st := h.sup.Stats(); !st.CrashLooping || st.Ready {
			t.Fatalf("after 2 crashes: got crashLooping %v ready %v, want true false", st.CrashLooping, st.Ready)
		}
		h.rec.take()
		if err := h.sup.RollingRestart(context.Background()); err != nil {
			t.Fatalf("RollingRestart: %v", err)
		}
		// Slot 0 restarted once after the first crash (worker 3), then the
		// guard tripped on worker 2; both slots get a fresh worker.
		st := h.sup.Stats()
		if st.CrashLooping || !st.Ready {
			t.Errorf("after RollingRestart: got crashLooping %v ready %v, want false true", st.CrashLooping, st.Ready)
		}
		live := 0
		for _, w := range st.Workers {
			if w.State == StateReady {
				live++
			}
		}
		if live != 2 {
			t.Errorf("ready workers after RollingRestart: got %d, want 2 (%+v)", live, st.Workers)
		}
	})
}
