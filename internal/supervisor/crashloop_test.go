package supervisor

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"testing/synctest"
	"time"
)

func TestCrashLoopPausesRestarts(t *testing.T) {
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
				time.Sleep(30 * time.Second) // within the pause (one window)
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
		time.Sleep(30 * time.Second) // within the pause
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

// A tripped guard pauses restarts for one window, then re-arms by itself
// and restarts every empty slot; a pool that crash-loops again right after
// pauses twice as long, up to maxCrashLoopPause.
func TestCrashLoopRearmsAfterPause(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const window = time.Minute
		h := startHarness(t, Options{Count: 2, CrashLoopExits: 1, CrashLoopWindow: window, BackoffJitter: -1}, nil)
		crashBoth := func() time.Time {
			h.env.proc(h.current(0)).crash(errors.New("exit status 1"))
			h.env.proc(h.current(1)).crash(errors.New("exit status 1"))
			synctest.Wait()
			return time.Now()
		}
		for i, wantPause := range []time.Duration{window, 2 * window, 4 * window} {
			tripped := crashBoth()
			st := h.sup.Stats()
			if !st.CrashLooping || st.Ready {
				t.Fatalf("trip %d: got crashLooping %v ready %v, want true false", i+1, st.CrashLooping, st.Ready)
			}
			if got := st.CrashLoopUntil.Sub(tripped); got != wantPause {
				t.Errorf("trip %d: got a pause of %v, want %v", i+1, got, wantPause)
			}
			n := len(h.env.startTimes())
			time.Sleep(wantPause - time.Nanosecond)
			synctest.Wait()
			if got := len(h.env.startTimes()); got != n {
				t.Fatalf("trip %d: %d workers started during the pause, want none", i+1, got-n)
			}
			time.Sleep(time.Nanosecond)
			synctest.Wait()
			if got := len(h.env.startTimes()) - n; got != 2 {
				t.Fatalf("trip %d: %d workers started when the pause ended, want 2", i+1, got)
			}
			if st := h.sup.Stats(); st.CrashLooping || !st.Ready {
				t.Fatalf("trip %d: after the pause got crashLooping %v ready %v, want false true", i+1, st.CrashLooping, st.Ready)
			}
		}
		if got := h.logs.count(slog.LevelError, "crash-looping"); got != 3 {
			t.Errorf("crash-loop errors logged: got %d, want 3", got)
		}

		// A pool that then runs well for two windows starts over at one.
		time.Sleep(2 * window)
		tripped := crashBoth()
		if got := h.sup.Stats().CrashLoopUntil.Sub(tripped); got != window {
			t.Errorf("after a good run: got a pause of %v, want %v", got, window)
		}
	})
}

func TestCrashLoopPauseIsBounded(t *testing.T) {
	s := &Supervisor{opts: Options{CrashLoopWindow: time.Minute}}
	now := time.Unix(0, 0)
	var got time.Duration
	for range 20 {
		got = s.tripLocked(now)
		now = s.rearmAt // trips back to back
	}
	if got != maxCrashLoopPause {
		t.Errorf("got a pause of %v after 20 trips, want %v", got, maxCrashLoopPause)
	}
}

// Workers that answered requests and died holding some were most likely
// killed by a request: however many die, restarts go on. A worker that
// dies holding nothing, or on the first request it was given, counts as
// its command's failure.
func TestCrashLoopSparesDeathsOfRequests(t *testing.T) {
	tests := []struct {
		name      string
		death     Death
		wantLoop  bool
		wantByReq int
	}{
		{"served, then died holding a request", Death{Served: 3, Held: 1}, false, 8},
		{"died holding nothing", Death{Served: 3}, true, 0},
		{"died on its first request", Death{Held: 1}, true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startHarness(t, Options{Count: 2, CrashLoopExits: 2, BackoffJitter: -1, StableAfter: time.Hour}, nil)
				h.bal.setDeath(tt.death)
				for i := range 8 {
					if h.sup.Stats().CrashLooping {
						break
					}
					h.env.proc(h.current(i % 2)).crash(errors.New("exit status 1"))
					synctest.Wait()
					time.Sleep(5 * time.Second) // past the restart delay
					synctest.Wait()
				}
				st := h.sup.Stats()
				if st.CrashLooping != tt.wantLoop || st.Ready == tt.wantLoop {
					t.Errorf("got crashLooping %v ready %v, want %v %v", st.CrashLooping, st.Ready, tt.wantLoop, !tt.wantLoop)
				}
				if st.RequestExits != tt.wantByReq {
					t.Errorf("RequestExits: got %d, want %d (of %d exits)", st.RequestExits, tt.wantByReq, st.Exits)
				}
			})
		})
	}
}
