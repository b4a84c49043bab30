package supervisor

import (
	"errors"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"
)

func TestStartAddsEveryWorkerOnceReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 2, Concurrency: 3}, func(f *fakeEnv) { f.notReadyAll = true })
		if got := h.sup.Ready(); got {
			t.Fatalf("Ready before any worker is ready: got %v, want false", got)
		}
		if got := h.sup.Stats().Workers; len(got) != 2 || got[0].State != StateStarting {
			t.Fatalf("Stats before readiness: got %+v, want 2 workers starting", got)
		}
		h.rec.take()

		h.env.setReady(2, true)
		time.Sleep(DefaultReadyInterval)
		synctest.Wait()
		h.wantEvents("add 2")
		if got := h.sup.Ready(); !got {
			t.Fatalf("Ready with worker 2 added: got %v, want true", got)
		}
		e, _ := h.bal.endpoint(2)
		if e.Network != "tcp" || e.Concurrency != 3 || e.Addr == "" || e.Pid != 1002 {
			t.Errorf("endpoint 2: got %+v, want tcp on 127.0.0.1 with concurrency 3, pid 1002", e)
		}
		starts := h.env.startTimes()
		for _, s := range starts {
			wantID := "SLUICE_WORKER_ID=" + strconv.Itoa(s.id)
			if !slices.Contains(s.env, wantID) || envValue(s.env, "PORT") == "" {
				t.Errorf("worker %d env: got %q, want PORT and %s", s.id, s.env[len(s.env)-3:], wantID)
			}
		}
		if e.Addr != "127.0.0.1:"+envValue(starts[slices.IndexFunc(starts, func(s startRecord) bool { return s.id == 2 })].env, "PORT") {
			t.Errorf("endpoint 2 address %q does not match its PORT", e.Addr)
		}
	})
}

func TestWarmupRequestsPrecedeAdd(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, WarmupRequests: 3, WarmupPath: "/warm"}, nil)
		h.wantEvents("start 1", "warm 1 /warm", "warm 1 /warm", "warm 1 /warm", "add 1")
	})
}

func TestStartTimeoutKillsAndRestarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, StartTimeout: 5 * time.Second}, func(f *fakeEnv) { f.notReadyAll = true })
		h.wantEvents("start 1")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		h.wantEvents("kill 1", "exit 1")
		time.Sleep(DefaultBackoffMin)
		synctest.Wait()
		h.wantEvents("start 2")
		if got := h.sup.Stats().Exits; got != 1 {
			t.Errorf("Exits: got %d, want 1", got)
		}
	})
}

func TestStartErrorCountsAsCrash(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, CrashLoopExits: 2}, func(f *fakeEnv) { f.startErr = errors.New("no such file") })
		time.Sleep(time.Minute)
		synctest.Wait()
		h.wantEvents("start-failed 1", "start-failed 2", "start-failed 3")
		if st := h.sup.Stats(); !st.CrashLooping || st.Exits != 3 {
			t.Errorf("Stats: got crashLooping %v exits %d, want true 3", st.CrashLooping, st.Exits)
		}
	})
}

// crashAndMeasure crashes the current worker of slot 0 once it has been up
// for up (at once if it already has), waits for the restart, and returns
// the time from the crash to the next start, or -1 if none came within wait.
func crashAndMeasure(h *harness, up, wait time.Duration) time.Duration {
	id := h.current(0)
	starts := h.env.startTimes()
	time.Sleep(up - time.Since(starts[len(starts)-1].at))
	h.env.proc(id).crash(errors.New("exit status 1"))
	crashed := time.Now()
	time.Sleep(wait)
	synctest.Wait()
	starts = h.env.startTimes()
	last := starts[len(starts)-1]
	if last.id == id {
		return -1
	}
	return last.at.Sub(crashed)
}

func TestBackoffGrowsWithJitterBounds(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		rnd  float64
		want []time.Duration
	}{
		{"no jitter drawn", 0, []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms}},
		{"half the jitter", 0.5, []time.Duration{90 * ms, 180 * ms, 360 * ms, 720 * ms, 900 * ms, 900 * ms}},
		{"largest jitter", 0.999999, []time.Duration{80 * ms, 160 * ms, 320 * ms, 640 * ms, 800 * ms, 800 * ms}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startHarness(t, Options{
					Count: 1, BackoffMin: 100 * ms, BackoffMax: time.Second, BackoffJitter: 0.2,
					StableAfter: 1000 * time.Hour, CrashLoopExits: -1,
				}, func(f *fakeEnv) { f.rnd = tt.rnd })
				var got []time.Duration
				for range tt.want {
					got = append(got, crashAndMeasure(h, 0, 2*time.Second))
				}
				for i := range got {
					if d := got[i] - tt.want[i]; d < -time.Microsecond || d > time.Microsecond {
						t.Fatalf("restart delays: got %v, want %v", got, tt.want)
					}
				}
			})
		})
	}
}

func TestBackoffResetsAfterStablePeriod(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name  string
		up    time.Duration // how long the fourth worker serves before crashing
		want4 time.Duration
	}{
		{"stable long enough", 10 * time.Second, 100 * ms},
		{"not stable long enough", 10*time.Second - ms, 800 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startHarness(t, Options{
					Count: 1, BackoffMin: 100 * ms, BackoffMax: time.Minute,
					BackoffJitter: -1, StableAfter: 10 * time.Second, CrashLoopExits: -1,
				}, nil)
				var gaps []time.Duration
				for _, up := range []time.Duration{0, 0, 0, tt.up} {
					gaps = append(gaps, crashAndMeasure(h, up, 2*time.Second))
				}
				want := []time.Duration{100 * ms, 200 * ms, 400 * ms, tt.want4}
				if !slices.Equal(gaps, want) {
					t.Errorf("restart delays: got %v, want %v", gaps, want)
				}
			})
		})
	}
}

func TestReadinessChecksBackOffToReadyInterval(t *testing.T) {
	ms := time.Millisecond
	// With ReadyInterval 1s, checks run at 0, 10, 30, 70, 150, 310, 630,
	// 1270, 2270 ms...: a worker is Added at the first check after it is
	// ready.
	tests := []struct{ readyAt, wantAdd time.Duration }{
		{5 * ms, 10 * ms},
		{11 * ms, 30 * ms},
		{100 * ms, 150 * ms},
		{700 * ms, 1270 * ms},
		{1700 * ms, 2270 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.readyAt.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h := startHarness(t, Options{Count: 1, ReadyInterval: time.Second}, func(f *fakeEnv) { f.notReadyAll = true })
				began := h.env.startTimes()[0].at
				time.Sleep(tt.readyAt - time.Since(began))
				h.env.setReady(1, true)
				for range 5000 {
					synctest.Wait()
					if _, ok := h.bal.endpoint(1); ok {
						break
					}
					time.Sleep(ms)
				}
				if got := time.Since(began); got != tt.wantAdd {
					t.Errorf("ready at %v: added at %v, want %v", tt.readyAt, got, tt.wantAdd)
				}
			})
		})
	}
}

// A worker is ready (in Stats and for Ready) only once the Balancer has
// it: a readiness probe or an operator that saw it ready before Add
// returned sent a request no worker could take (503, No Worker
// Available; seen once in CI behind a Next.js worker).
func TestReadyOnlyOnceAdded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t, Options{Count: 1}, nil)
		var during []State
		var readyDuring []bool
		h.bal.onAdd = func(e Endpoint) {
			readyDuring = append(readyDuring, h.sup.Ready())
			for _, w := range h.sup.Stats().Workers {
				if w.ID == e.ID {
					during = append(during, w.State)
				}
			}
		}
		h.run()
		if len(during) != 1 || during[0] == StateReady || readyDuring[0] {
			t.Errorf("while Add ran: states %v, Ready %v; want one state not ready, Ready false", during, readyDuring)
		}
		if st := h.sup.Stats(); !st.Ready || st.Workers[0].State != StateReady || !h.sup.Ready() {
			t.Errorf("after Add: %+v, Ready %v; want the worker ready", st.Workers, h.sup.Ready())
		}
	})
}
