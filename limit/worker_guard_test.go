package limit

import (
	"testing"
	"time"
)

// windowOf feeds w one window in which it held held requests and finished
// n of them, each after rtt and each reporting sat, and returns the limit
// Decide leaves at its end.
func windowOf(w *Worker, now *time.Time, held, n int, rtt time.Duration, sat float64) int {
	w.Occupy(*now, held)
	for range n {
		w.Report(sat)
		w.Complete(rtt, false)
	}
	*now = now.Add(WorkerWindow)
	l, _ := w.Decide(*now)
	return l
}

// backloggedWindow is windowOf for a worker behind a backlog: the front
// fills every slot the limit has at once, those that completions add too.
func backloggedWindow(w *Worker, now *time.Time, n int, rtt time.Duration, sat float64) int {
	w.Occupy(*now, w.Limit())
	for range n {
		w.Report(sat)
		w.Complete(rtt, false)
		w.Occupy(*now, w.Limit())
	}
	*now = now.Add(WorkerWindow)
	l, _ := w.Decide(*now)
	return l
}

// learnedAt16 returns a Worker at 16 (of 64) that has learned a no-load
// latency of 60 ms from one light window, whose reports said sat.
func learnedAt16(t *testing.T, now *time.Time, sat float64) *Worker {
	t.Helper()
	w, err := NewWorker(*now, WorkerOptions{Initial: 16, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got := windowOf(w, now, 1, 4, 60*time.Millisecond, sat); got != 16 {
		t.Fatalf("a light window: got limit %d, want 16 held", got)
	}
	return w
}

// A cut for latency needs the latency over its bound in two windows in a
// row, and is judged once per backlog: the requests that finish in the
// windows after it were sent under the old limit and waited inside the
// worker behind as many others, so their latency says nothing of the new
// limit's. The guard judges again once they are through: requests that
// take less time at the lower limit were queued inside the worker, and
// the cut stays; if they are still slow, it cuts again.
func TestWorkerGuardCutsOnceForOneBacklog(t *testing.T) {
	now := time.Unix(0, 0)
	w := learnedAt16(t, &now, 0.3)
	// 250 ms is over three times the 60 ms no-load latency.
	if got := windowOf(w, &now, 16, 16, 250*time.Millisecond, 0.5); got != 16 {
		t.Fatalf("at 16, one window of 250 ms: got limit %d, want 16 held (a stall passes)", got)
	}
	if got := windowOf(w, &now, 8, 8, 60*time.Millisecond, 0.5); got != 16 {
		t.Fatalf("8 held, 60 ms again: got limit %d, want 16", got)
	}
	if got := windowOf(w, &now, 16, 16, 250*time.Millisecond, 0.5); got != 16 {
		t.Fatalf("at 16, 250 ms once more after a good window: got limit %d, want 16 held", got)
	}
	// A second in a row: cut to where it would be at the bound, three
	// times the no-load latency: 16 x 180/250.
	if got := windowOf(w, &now, 16, 16, 250*time.Millisecond, 0.5); got != 11 {
		t.Fatalf("at 16, a second window of 250 ms: got limit %d, want 11", got)
	}
	// In the windows that start within 250 ms of the cut, what finishes
	// was queued before it.
	for i := range 3 {
		if got := windowOf(w, &now, 11, 11, 250*time.Millisecond, 0.5); got != 11 {
			t.Fatalf("window %d after the cut, the old backlog finishing: got limit %d, want 11 held", i+1, got)
		}
	}
	// 200 ms at 11: faster than the 211 ms halfway between the 250 ms
	// the cut was sized by and the 172 ms it would take at 11 had they all
	// queued, so they did; still over the bound.
	if got := windowOf(w, &now, 11, 11, 200*time.Millisecond, 0.5); got != 11 {
		t.Fatalf("past the backlog, 200 ms at 11 once: got limit %d, want 11 held", got)
	}
	if got := windowOf(w, &now, 11, 11, 200*time.Millisecond, 0.5); got != 9 {
		t.Errorf("past the backlog, 200 ms at 11 twice: got limit %d, want 9, cut again (11 x 180/200)", got)
	}
}

// One request answered in a millisecond (a health check or a cached page
// through the front), alone in a window of a worker at its start, does not
// become the worker's no-load latency: the requests after it, taking 60 ms,
// are not judged queued, and the limit doubles as a fresh worker's should.
func TestWorkerBaselineNeedsSamples(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got := windowOf(w, &now, 1, 1, time.Millisecond, 0.02); got != 2 {
		t.Fatalf("one fast request: got limit %d, want 2", got)
	}
	// At least doubling each window (the completions of a window that
	// held its limit add to it as well).
	for range 3 {
		l := w.Limit()
		if got := backloggedWindow(w, &now, max(l, 4), 60*time.Millisecond, 0.05); got < 2*l {
			t.Fatalf("at %d, requests taking 60 ms, the loop idle: got limit %d, want at least %d", l, got, 2*l)
		}
	}
	// Under load too: a window with fewer completions than a window's
	// judgement needs does not lower it (the idle loop still doubles the
	// limit reached).
	l := w.Limit()
	if got := backloggedWindow(w, &now, 1, time.Millisecond, 0.05); got < min(2*l, 64) {
		t.Fatalf("one fast request among %d held: got limit %d, want at least %d", l, got, min(2*l, 64))
	}
	if l := w.Limit(); l < 64 {
		if got := backloggedWindow(w, &now, l, 60*time.Millisecond, 0.05); got < min(2*l, 64) {
			t.Errorf("at %d, 60 ms again: got limit %d, want at least %d, doubling still", l, got, min(2*l, 64))
		}
	}
}

// A worker whose requests take between twice and three times their
// no-load latency while its loop is not saturated is given more: an async
// worker sharing its CPU waits for it more as its load grows, whatever its
// limit, and two real Node workers sharing one CPU still served more at
// 2.2 times their no-load latency (a fixed 32) than at twice; held at
// twice, they served 4-17% less. Past three times, it is not.
func TestWorkerGuardGrowsUpToThreeTimes(t *testing.T) {
	now := time.Unix(0, 0)
	w := learnedAt16(t, &now, 0.1)
	if got := windowOf(w, &now, 16, 16, 150*time.Millisecond, 0.5); got <= 16 {
		t.Fatalf("at 16, 150 ms (2.5 times the no-load latency), loop half busy: got limit %d, want more than 16", got)
	}
	l := w.Limit()
	if got := windowOf(w, &now, l, l, 190*time.Millisecond, 0.5); got != l {
		t.Errorf("at %d, 190 ms (over three times the no-load latency) once: got limit %d, want %d held", l, got, l)
	}
}

// A worker whose requests take as long after a cut for latency as before
// it did not queue them: its requests wait longer on their own (its
// database or an API it calls slowed down), and the cut only served fewer.
// The cut is undone, that latency becomes its no-load latency, and the
// limit grows again while its loop is idle: cut after cut, an async worker
// whose waits grew fourfold went from 34 to 7 in simulation, and real Node
// workers to 2.
func TestWorkerGuardUndoesCutForOwnLatency(t *testing.T) {
	now := time.Unix(0, 0)
	w := learnedAt16(t, &now, 0.2)
	for i, want := range []int{16, 11, 11, 11, 11} {
		if got := windowOf(w, &now, w.Limit(), w.Limit(), 250*time.Millisecond, 0.3); got != want {
			t.Fatalf("window %d at 250 ms: got limit %d, want %d (the cut and its backlog)", i+1, got, want)
		}
	}
	if got := windowOf(w, &now, 11, 11, 250*time.Millisecond, 0.3); got != 16 {
		t.Fatalf("past the backlog, still 250 ms at 11: got limit %d, want 16, the cut undone", got)
	}
	if got := windowOf(w, &now, 16, 16, 250*time.Millisecond, 0.3); got <= 16 {
		t.Errorf("250 ms at 16 after the undo: got limit %d, want more than 16 (250 ms is its no-load latency now, its loop idle)", got)
	}
}

// A cut for latency is not undone, however long the requests still take,
// when the worker's loop was half busy or more (read over two windows) when
// it cut or when it is judged: its requests do queue, their latency still
// growing with a backlog the cut has not bounded yet (async renders that
// became CPU-bound ones: undone, real Node workers went back from 51 to 64
// and came down by a tenth a window for a second more), or too noisy to
// judge (two overloaded workers on one CPU, reporting 0.45 and 0.95 in
// turns).
func TestWorkerGuardKeepsCutOfBusyLoop(t *testing.T) {
	for _, tc := range []struct {
		name string
		sat  [6]float64 // the reports of the windows: before the cut, the cut, three of its backlog, the judge
	}{
		{"saturated when judged", [6]float64{0.3, 0.3, 0.3, 0.3, 0.3, 0.99}},
		{"half busy when judged", [6]float64{0.3, 0.3, 0.3, 0.3, 0.3, 0.6}},
		{"saturated when cut", [6]float64{0.3, 0.99, 0.3, 0.3, 0.3, 0.3}},
		{"swinging", [6]float64{0.95, 0.44, 0.95, 0.44, 0.95, 0.44}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(0, 0)
			w := learnedAt16(t, &now, 0.2)
			if got := windowOf(w, &now, 16, 16, 250*time.Millisecond, tc.sat[0]); got != 16 {
				t.Fatalf("at 16, one window of 250 ms: got limit %d, want 16 held", got)
			}
			if got := windowOf(w, &now, 16, 16, 250*time.Millisecond, tc.sat[1]); got != 11 {
				t.Fatalf("at 16, a second window of 250 ms: got limit %d, want 11", got)
			}
			for i := range 3 {
				if got := windowOf(w, &now, 11, 11, 250*time.Millisecond, tc.sat[2+i]); got != 11 {
					t.Fatalf("window %d after the cut: got limit %d, want 11 held", i+1, got)
				}
			}
			if got := windowOf(w, &now, 11, 11, 300*time.Millisecond, tc.sat[5]); got > 11 {
				t.Errorf("past the backlog, 300 ms at 11: got limit %d, want the cut kept (11 or less)", got)
			}
		})
	}
}
