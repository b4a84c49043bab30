package limit

import (
	"testing"
	"time"
)

// serialStart feeds w a window of a worker started into its load at its
// limit, serving its requests one after another, each render long: the
// request that began on the idle worker finishes after one render, the
// rest after as many as the limit, the loop read at sat.
func serialStart(w *Worker, now *time.Time, render time.Duration, sat float64) int {
	l := w.Limit()
	w.Occupy(*now, l)
	w.Report(sat)
	w.Complete(render, false)
	for range 4 {
		w.Occupy(*now, l)
		w.Report(sat)
		w.Complete(time.Duration(l)*render, false)
	}
	w.Occupy(*now, l)
	*now = now.Add(WorkerWindow)
	got, _ := w.Decide(*now)
	return got
}

// A no-load latency learnt only under load with the loop busy is an upper
// bound: a front started into its load learns a CPU-bound worker's at its
// first limit, four renders. When the request that began on the idle
// worker took half of it or less (requests that queued behind each other)
// and the loop is half busy, the limit is held at 1 until the worker has
// answered requests alone, after those sent under the old limit have
// drained; then the rule judges afresh from 1, with the latency of one
// render as the baseline. A kernel reading of a shared CPU (0.85) never
// reaches MaxSaturation: without the measurement such a worker sat at 4
// with every request queued behind three others.
func TestWorkerAloneMeasuresAnUpperBound(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Initial: 4, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	const render = 20 * time.Millisecond
	if got := serialStart(w, &now, render, 0.85); got != 1 || w.Ramping() {
		t.Fatalf("four renders a request, the first one, the loop 85%% busy: got limit %d, ramping %v; want 1, the ramp over", got, w.Ramping())
	}
	// The four sent under the old limit drain for about their rtt: one
	// window, whose completions are not taken as the lone latency.
	if got := windowOf(w, &now, 1, 4, 3*render, 0.9); got != 1 {
		t.Fatalf("the old limit's requests draining: got limit %d, want 1", got)
	}
	if w.baseSure {
		t.Fatalf("the drain's completions taken as alone: baseline %v", time.Duration(w.baseline))
	}
	for i := range 5 {
		if got := windowOf(w, &now, 1, 5, render, 0.9); got != 1 {
			t.Fatalf("window %d alone, 20 ms each: got limit %d, want 1", i, got)
		}
	}
	if !w.baseSure || w.baseline != float64(render) {
		t.Errorf("after the lone windows: baseline %v, sure %v; want 20ms, sure", time.Duration(w.baseline), w.baseSure)
	}
}

// An async worker's requests wait on their own: the one that began on the
// idle worker took as long as the others. Measured alone once its loop
// reads 0.8 busy in two windows (its baseline learnt in load's first
// window, whose reading covered the idle time), its first lone answers
// take as long as the baseline: the limit is given back at once, the
// baseline sure, and it is not measured alone again.
func TestWorkerAsyncMeasuredAloneBriefly(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Initial: 4, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got := backloggedWindow(w, &now, 5, 60*time.Millisecond, 0.1); got < 8 {
		t.Fatalf("at 4, the loop a tenth busy: got limit %d, want doubled", got)
	}
	// Held at 1 for the drain and one window of lone answers, at most.
	var at1, before int
	for i := range 8 {
		l := w.Limit()
		got := backloggedWindow(w, &now, 20, 62*time.Millisecond, 0.9)
		if got == 1 {
			if at1 == 0 {
				before = l
			}
			at1++
		} else if at1 > 0 && got != before {
			t.Fatalf("window %d: got limit %d given back, want %d, the limit the measurement left", i, got, before)
		}
	}
	if at1 == 0 || at1 > 2 || !w.baseSure {
		t.Errorf("windows at 1: %d, sure %v; want 1 or 2, then sure", at1, w.baseSure)
	}
}

// Load's first reading covers the idle time before it: low, it says
// nothing, and the limit doubles as in any first ramp. The next, busy,
// has a serial worker measured alone.
func TestWorkerFirstReadingLowThenBusy(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Initial: 4, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	if got := serialStart(w, &now, 20*time.Millisecond, 0.3); got != 8 {
		t.Fatalf("at 4, the first reading 0.3: got limit %d, want 8", got)
	}
	if got := backloggedWindow(w, &now, 5, 160*time.Millisecond, 0.9); got != 1 {
		t.Errorf("at 8, eight renders a request, the loop 90%% busy: got limit %d, want 1, measured alone", got)
	}
}

// A worker whose requests take as long as the others it holds ahead of
// them, its loop busy, serves them one after another, though the kernel
// reads its loop under MaxSaturation: in two windows in a row, its limit
// is cut to where they would take 1.75 no-load latencies. One window is
// as often a stall; an async worker's requests, which wait on their own,
// take little longer for being held together.
func TestWorkerSerialCut(t *testing.T) {
	now := time.Unix(0, 0)
	learned := func() *Worker {
		t.Helper()
		w, err := NewWorker(now, WorkerOptions{Initial: 3, Max: 64})
		if err != nil {
			t.Fatal(err)
		}
		if got := windowOf(w, &now, 1, 4, 20*time.Millisecond, 0.3); got != 3 || !w.baseSure {
			t.Fatalf("a light window, 20 ms: got limit %d, sure %v; want 3, sure", got, w.baseSure)
		}
		return w
	}
	w := learned()
	if got := backloggedWindow(w, &now, 5, 60*time.Millisecond, 0.9); got != 3 {
		t.Fatalf("three held, 60 ms, once: got limit %d, want 3 held", got)
	}
	if got := backloggedWindow(w, &now, 5, 60*time.Millisecond, 0.9); got != 1 {
		t.Errorf("three held, 60 ms, twice: got limit %d, want 1", got)
	}

	w = learned()
	for i := range 3 {
		if got := backloggedWindow(w, &now, 5, 25*time.Millisecond, 0.9); got < 3 {
			t.Errorf("window %d, three held, 25 ms: got limit %d, want at least 3", i, got)
		}
	}
}
