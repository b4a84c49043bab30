package limit

import (
	"math"
	"testing"
	"time"
)

// A worker's limit is ramping from its start until it is first cut: while
// its loop is idle it doubles, and Ramping says so; a saturated window
// cuts it and ends the ramp for good, even once the loop is idle again.
func TestWorkerRamping(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	window := func(sat float64) int { return windowOf(w, &now, w.Limit(), w.Limit(), 60*time.Millisecond, sat) }
	if !w.Ramping() {
		t.Fatal("a new worker: got not ramping, want ramping")
	}
	for _, want := range []int{2, 4, 8} {
		if got := window(0.05); got != want || !w.Ramping() {
			t.Fatalf("an idle loop: got limit %d, ramping %v; want %d, ramping", got, w.Ramping(), want)
		}
	}
	// Saturated by four requests in the window, each using the loop
	// for 25 ms of its 60: requests that queue for it, not an async
	// worker's that use it for little of their time.
	if got := windowOf(w, &now, 8, 4, 60*time.Millisecond, 0.99); got != 7 || w.Ramping() {
		t.Fatalf("a saturated loop at 8: got limit %d, ramping %v; want 7, the ramp over", got, w.Ramping())
	}
	window(0.05)
	if w.Ramping() {
		t.Error("idle again after a cut: got ramping, want the ramp over for good")
	}
}

// In slow start, each request that finishes near the no-load latency while
// the worker holds its whole limit adds one to the limit at once, and
// Decide says so before the window ends, up to twice the limit the last
// window set; not a request finished while the worker held less, nor one
// that took over 1.2 times the no-load latency, nor any once this
// window's reports say the loop is half busy.
func TestWorkerSlowStartGrowsWithCompletions(t *testing.T) {
	now := time.Unix(0, 0)
	fresh := func() *Worker {
		t.Helper()
		w, err := NewWorker(now, WorkerOptions{Max: 64})
		if err != nil {
			t.Fatal(err)
		}
		// A light window: 60 ms with the loop idle. Slow start doubles.
		if got := windowOf(w, &now, 1, 4, 60*time.Millisecond, 0.02); got != 2 {
			t.Fatalf("a light window: got limit %d, want 2", got)
		}
		return w
	}
	decide := func(w *Worker, want int, wantChanged bool) {
		t.Helper()
		now = now.Add(time.Millisecond) // within the window
		if got, changed := w.Decide(now); got != want || changed != wantChanged {
			t.Fatalf("got limit %d, changed %v; want %d, changed %v", got, changed, want, wantChanged)
		}
	}

	w := fresh()
	w.Occupy(now, 2)
	w.Report(0.05)
	w.Complete(60*time.Millisecond, false)
	decide(w, 3, true)
	w.Occupy(now, 1) // the worker holds less than its limit
	w.Complete(60*time.Millisecond, false)
	decide(w, 3, false)
	w.Occupy(now, 3)
	w.Complete(80*time.Millisecond, false) // over 1.2 times 60 ms
	decide(w, 3, false)
	w.Occupy(now, 3)
	w.Complete(60*time.Millisecond, false)
	w.Occupy(now, 4)
	w.Complete(60*time.Millisecond, false) // at twice the last window's limit
	decide(w, 4, true)

	w = fresh()
	w.Occupy(now, 2)
	w.Report(0.6) // half busy
	w.Complete(60*time.Millisecond, false)
	decide(w, 2, false)

	// Over once cut: a saturated window ends slow start.
	w = fresh()
	if got := windowOf(w, &now, 2, 4, 60*time.Millisecond, 0.99); got != 1 {
		t.Fatalf("a saturated window at 2: got limit %d, want 1", got)
	}
	w.Occupy(now, 1)
	w.Complete(60*time.Millisecond, false)
	decide(w, 1, false)
}

// Completions in slow start never take the limit past Max.
func TestWorkerSlowStartStaysWithinMax(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Max: 3})
	if err != nil {
		t.Fatal(err)
	}
	if got := windowOf(w, &now, 1, 4, 60*time.Millisecond, 0.02); got != 2 {
		t.Fatalf("a light window: got limit %d, want 2", got)
	}
	for range 4 {
		w.Occupy(now, w.Limit())
		w.Report(0.05)
		w.Complete(60*time.Millisecond, false)
	}
	now = now.Add(time.Millisecond)
	if got, _ := w.Decide(now); got != 3 {
		t.Errorf("four completions at the whole limit, loop idle: got limit %d, want Max, 3", got)
	}
}

// The occupancy of a window in which the worker held a quarter of its
// limit or less (a lull) does not bound what the next window's reports
// project: taken as the load they covered, it held the limit where it was.
func TestWorkerLullDoesNotHoldGrowth(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Initial: 8, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	// Its no-load latency measured alone first: 60 ms.
	if got := windowOf(w, &now, 1, 4, 60*time.Millisecond, 0.05); got != 8 {
		t.Fatalf("a light window at 8: got limit %d, want 8 held", got)
	}
	if got := windowOf(w, &now, 8, 4, 60*time.Millisecond, 0.99); got != 7 {
		t.Fatalf("a saturated window at 8: got limit %d, want 7", got)
	}
	// A lull of two windows (the first still counts the 8 held as it
	// began as its peak).
	windowOf(w, &now, 1, 4, 60*time.Millisecond, 0.05)
	l := w.Limit()
	if got := windowOf(w, &now, 1, 4, 60*time.Millisecond, 0.05); got != l {
		t.Fatalf("a lull at %d: got limit %d, want it held", l, got)
	}
	// Loaded again, the loop a third busy: a square-root step.
	want := l + int(math.Ceil(math.Sqrt(float64(l))))
	if got := windowOf(w, &now, l, l, 60*time.Millisecond, 0.3); got != want {
		t.Errorf("at %d after a lull, the loop a third busy: got limit %d, want %d", l, got, want)
	}
}

// A worker that reports nothing is in slow start until a probe fails: the
// first probe up (from 1 to 2, a doubling) judged on a window that a noisy
// request or two made slow is judged on one more window, as a smaller step
// is, rather than ending slow start on four requests. Judged on one, a
// simulated async worker whose waits vary by ±50% stayed at 1 or 2 for up
// to two seconds at 400 requests a second.
func TestWorkerQuietSlowStartSurvivesOneSlowWindow(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	quiet := func(held int, rtt time.Duration) int {
		return windowOf(w, &now, held, 4, rtt, math.NaN()) // NaN: no report taken
	}
	if got := quiet(1, 60*time.Millisecond); got != 2 {
		t.Fatalf("a light window: got limit %d, want a probe to 2", got)
	}
	quiet(2, 60*time.Millisecond) // the probe settles: not judged
	quiet(2, 60*time.Millisecond)
	if got := quiet(2, 95*time.Millisecond); got != 2 || !w.Ramping() {
		t.Fatalf("the probe's first window slow (95 ms against 60): got limit %d, ramping %v; want 2 held, ramping", got, w.Ramping())
	}
	if got := quiet(2, 60*time.Millisecond); got != 4 || !w.Ramping() {
		t.Errorf("its second window at 60 ms: got limit %d, ramping %v; want 4, doubling on", got, w.Ramping())
	}
}

// A worker added half a second before its first request (a front started
// before its load arrives) is judged on the load: its first window starts
// when the request does, so the occupancy paired with its reports is the
// load's, not a sixth of it, and the first slow start doubles, and its
// completions take it on, rather than being held at 1 by a projection of
// the concurrency that saturates the loop diluted by the idle stretch.
func TestWorkerWindowStartsWithTheLoad(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(500 * time.Millisecond)
	// Each request uses the loop for a tenth of its 60 ms: about ten
	// saturate it.
	if got := windowOf(w, &now, 1, 4, 60*time.Millisecond, 0.1); got != 2 {
		t.Fatalf("the first window of load after 500 ms idle: got limit %d, want 2", got)
	}
	if got := backloggedWindow(w, &now, 4, 60*time.Millisecond, 0.2); got != 4 {
		t.Errorf("the next window, backlogged: got limit %d, want 4 (completions from 2)", got)
	}
}

// In its first slow start, a worker whose requests slow a little as it
// takes more (over 1.2 times its no-load latency, within 1.5: two
// workers sharing a CPU each wait for the other's turns) climbs to the
// concurrency its loop's reports project, up to twice the limit, rather
// than by the square root of its limit: by square-root steps two async
// Node workers on one core took 0.55-0.65 s to climb from 14 to 40, and
// a fresh front lost what arrived meanwhile. Slower than that, or
// once the ramp is over, it steps by the square root.
func TestWorkerFirstRampClimbsToTheProjection(t *testing.T) {
	now := time.Unix(0, 0)
	// At 16, the loop 30% busy: saturation projected at 0.98 x 16 / 0.3,
	// 52; twice the limit is 32.
	w := learnedAt16(t, &now, 0.02)
	if got := windowOf(w, &now, 16, 8, 75*time.Millisecond, 0.3); got != 32 || !w.Ramping() {
		t.Errorf("ramping at 16, requests 1.25 times slower: got limit %d, ramping %v; want 32, ramping", got, w.Ramping())
	}
	w = learnedAt16(t, &now, 0.02)
	if got := windowOf(w, &now, 16, 8, 100*time.Millisecond, 0.3); got != 20 {
		t.Errorf("ramping at 16, requests 1.67 times slower: got limit %d, want 20, a square-root step", got)
	}
	// The ramp over: a saturated window (four requests, each using the
	// loop for 25 ms of its 60) cuts the limit to 14; the same
	// window as the first then steps by the square root.
	w = learnedAt16(t, &now, 0.02)
	if got := windowOf(w, &now, 16, 4, 60*time.Millisecond, 0.99); got != 14 || w.Ramping() {
		t.Fatalf("a saturated window at 16: got limit %d, ramping %v; want 14, the ramp over", got, w.Ramping())
	}
	if got := windowOf(w, &now, 14, 8, 75*time.Millisecond, 0.3); got != 18 {
		t.Errorf("the ramp over, at 14, requests 1.25 times slower: got limit %d, want 18, a square-root step", got)
	}
}

// In its first ramp, a worker whose loop is half busy though it never
// held its whole limit comes down to the concurrency its reports project
// saturates the loop, at least 1, and the ramp is over: a single-threaded
// renderer at capacity, one request at a time, at its first limit of 4.
// Not one whose loop is under half busy, nor one that held two requests
// or more on average, nor one that held its whole limit.
func TestWorkerFirstRampBusyBelowItsLimit(t *testing.T) {
	now := time.Unix(0, 0)
	fresh := func() *Worker {
		t.Helper()
		w, err := NewWorker(now, WorkerOptions{Initial: 4, Max: 64})
		if err != nil {
			t.Fatal(err)
		}
		return w
	}
	w := fresh()
	// One request held throughout, the loop 90% busy.
	if got := windowOf(w, &now, 1, 4, 120*time.Millisecond, 0.9); got != 1 || w.Ramping() {
		t.Errorf("one request at a time, the loop 90%% busy: got limit %d, ramping %v; want 1, the ramp over", got, w.Ramping())
	}
	// Its no-load latency measured alone (120 ms), the loop idle: slow
	// start doubles.
	knownFresh := func() *Worker {
		t.Helper()
		w := fresh()
		if got := windowOf(w, &now, 1, 4, 120*time.Millisecond, 0.05); got != 4 {
			t.Fatalf("a light window at 4: got limit %d, want 4 held", got)
		}
		return w
	}
	w = knownFresh()
	// Two held, the loop 60% busy, requests no slower than alone: not a
	// renderer of one at a time (an async worker's ramp goes on).
	if got := windowOf(w, &now, 2, 4, 120*time.Millisecond, 0.6); got != 4 || !w.Ramping() {
		t.Errorf("two requests, the loop 60%% busy: got limit %d, ramping %v; want 4, still ramping", got, w.Ramping())
	}
	w = fresh()
	if got := windowOf(w, &now, 1, 4, 120*time.Millisecond, 0.3); got != 4 || !w.Ramping() {
		t.Errorf("one request, the loop 30%% busy: got limit %d, ramping %v; want 4, still ramping", got, w.Ramping())
	}
	w = knownFresh()
	// The whole limit held, the loop 60% busy: the first ramp's growth
	// rules (a worker that holds all it is given may take more).
	if got := windowOf(w, &now, 4, 8, 120*time.Millisecond, 0.6); got < 4 {
		t.Errorf("the whole limit held, the loop 60%% busy: got limit %d, want at least 4", got)
	}
}

// After its first ramp, a worker's first window of load after an idle
// spell is not judged by a low report: the report covers the idle time
// too. A CPU-bound worker at 1 that a diluted report took for a loop under
// a quarter busy doubled at the start of every burst. A high report is
// taken, and a worker still in its first ramp doubles as before.
func TestWorkerReportAfterIdleHeld(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	// Renders of 5 ms, one at a time, the loop saturated: ramped at 1.
	for range 3 {
		windowOf(w, &now, 1, 20, 5*time.Millisecond, 0.99)
	}
	if w.Limit() != 1 || w.Ramping() {
		t.Fatalf("saturated at 1: limit %d, ramping %v; want 1, ramp over", w.Limit(), w.Ramping())
	}
	w.Occupy(now, 0)
	now = now.Add(time.Second) // idle
	if got := windowOf(w, &now, 1, 20, 5*time.Millisecond, 0.1); got != 1 {
		t.Errorf("the first window after an idle second, a report of 0.1: got limit %d, want 1 held", got)
	}
	if got := windowOf(w, &now, 1, 20, 5*time.Millisecond, 0.99); got != 1 {
		t.Errorf("the next window, saturated: got limit %d, want 1", got)
	}
	// The same window without the idle second before it is judged: a loop
	// under a quarter busy at its whole limit doubles.
	if got := windowOf(w, &now, 1, 20, 5*time.Millisecond, 0.1); got != 2 {
		t.Errorf("a window at 1 with a report of 0.1, no idle before it: got limit %d, want 2", got)
	}

	// A high report after idle time is evidence.
	w.Occupy(now, 0)
	now = now.Add(time.Second)
	if got := backloggedWindow(w, &now, 20, 10*time.Millisecond, 0.99); got != 1 {
		t.Errorf("the first window after an idle second at 2, a report of 0.99: got limit %d, want 1, cut", got)
	}

	// In the first ramp, a low report after idle time doubles.
	w, err = NewWorker(now, WorkerOptions{Initial: 4, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Second)
	if got := backloggedWindow(w, &now, 4, 60*time.Millisecond, 0.1); got != 8 {
		t.Errorf("the first ramp's first window after an idle second: got limit %d, want 8", got)
	}
}
