package limit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// A worker whose renders take longer than a window (two or three complete
// in 100 ms) and whose loop looks less than saturated while its requests
// queue inside it (the kernel's reading of a Node worker on cores shared
// with its neighbour and the front, its collections on helper threads:
// 0.75-0.85) is held back by its latency as a fast one is, from a fresh
// front's first limit under a load past its capacity.
func TestWorkerLimitSimSlowRendersIdleLookingLoop(t *testing.T) {
	for _, report := range []string{"0.800", "0.600"} {
		t.Run(report, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := newSimFront(newSimWorker(60*time.Millisecond, 0), 64, func(float64) string { return report })
				f.wl = mustWorker(WorkerOptions{Initial: 4, Max: 64})
				trace := f.load(25, 8*time.Second)
				if got := slicesMax(trace[20:]); got > 5 {
					t.Errorf("limit reached %d after 2 s, want at most 5 (trace %v)", got, trace)
				}
			})
		})
	}
}

// A worker whose requests wait long on their own (300 ms of I/O, 5 ms of
// loop) finishes as few a window as a slow renderer, but its latency does
// not grow with what it holds: the line through its means under load says
// so, and it is given what its load needs (about 8 at 25/s) and serves
// all of it.
func TestWorkerLimitSimSlowAsyncStillGrows(t *testing.T) {
	for _, seed := range []uint64{0, 1, 2, 3, 4, 5} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				sw := newSimWorker(5*time.Millisecond, 300*time.Millisecond)
				if seed > 0 { // the waits and the CPU varying by up to ±50%
					sw.jitter = rand.New(rand.NewPCG(seed, 7))
				}
				f := newSimFront(sw, 64, elu)
				f.wl = mustWorker(WorkerOptions{Initial: 4, Max: 64})
				trace := f.load(25, 8*time.Second)
				if got := slicesMax(trace); got < 8 {
					t.Errorf("limit reached %d, want at least 8 (trace %v)", got, trace)
				}
				if got := float64(f.good) / float64(f.served); f.served < 190 || got < 0.98 {
					t.Errorf("%d served, %.1f%% of them within a second; want about 200 and at least 98%% (trace %v)", f.served, 100*got, trace)
				}
			})
		})
	}
}

func TestLoneLatency(t *testing.T) {
	ms := float64(time.Millisecond)
	for _, tc := range []struct {
		name           string
		o1, r1, o2, r2 float64
		want           float64
	}{
		{"queued behind each other", 2, 120 * ms, 6, 360 * ms, 60 * ms},
		{"the points in either order", 6, 360 * ms, 2, 120 * ms, 60 * ms},
		{"no lower than the lower point shared", 2, 120 * ms, 6, 700 * ms, 60 * ms},
		{"waits of their own", 4, 300 * ms, 12, 310 * ms, 300 * ms},
		{"waits of their own, noisy", 4, 300 * ms, 6, 390 * ms, 300 * ms},
		{"nearly in proportion", 4, 240 * ms, 6, 345 * ms, 82.5 * ms},
		{"latency that fell", 4, 300 * ms, 12, 280 * ms, 280 * ms},
		{"occupancies too close", 4, 240 * ms, 5, 300 * ms, 240 * ms},
		{"under one request held", 0.5, 60 * ms, 3, 180 * ms, 60 * ms},
		{"no latency at the lower point", 2, 0, 6, 300 * ms, 0},
		{"nothing held at the lower point", 0, 60 * ms, 6, 300 * ms, 60 * ms},
	} {
		if got := loneLatency(tc.o1, tc.r1, tc.o2, tc.r2); math.Abs(got-tc.want) > 1e-6*ms {
			t.Errorf("%s: loneLatency(%v, %v, %v, %v) = %v, want %v", tc.name, tc.o1, tc.r1/ms, tc.o2, tc.r2/ms, got/ms, tc.want/ms)
		}
	}
}

// The no-load latency of a worker under load: the line through two means
// gathered over more than one window each, unless a window between them
// held eight completions (the worker is not slow; windows short of four
// are stalls).
func TestWorkerBaselineFromSparseMeans(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		between int // completions of a window between the two means; 0: none
		want    time.Duration
	}{
		{"two slow means", 0, 50 * ms},
		{"four in a window between", 4, 50 * ms},
		{"a fast window between", 8, 100 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			w, err := NewWorker(now, WorkerOptions{Initial: 8, Max: 64})
			if err != nil {
				t.Fatal(err)
			}
			window := func(held, n int, rtt time.Duration) {
				w.Occupy(now, held)
				for range n {
					w.Complete(rtt, false)
				}
				w.Report(0.5)
				now = now.Add(100 * ms)
				w.Decide(now)
			}
			window(2, 2, 100*ms) // held 2, two completions of 100 ms a window
			window(2, 2, 100*ms)
			if tc.between > 0 {
				window(2, tc.between, 100*ms)
			}
			window(6, 2, 300*ms) // held 6: 300 ms, as queued behind each other
			window(6, 2, 300*ms)
			if got := time.Duration(w.baseline); got != tc.want {
				t.Errorf("baseline %v, want %v", got, tc.want)
			}
		})
	}
}
