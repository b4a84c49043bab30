package limit

import (
	"testing"
	"time"
)

// Past its loop's saturation, a worker whose requests use the loop for a
// quarter of their no-load latency or less (an async one) is not cut for
// the saturation: its limit is probed up, and a probe is kept for the
// throughput it brings (a quarter of a request's worth for each request
// added), however much slower its requests became, and undone when it
// brings nothing, though they stayed within 1.5 times their no-load
// latency (which keeps the probe of a worker that reports nothing). A
// worker whose requests use the loop for more of their latency is cut.
func TestWorkerSaturatedAsyncClimbs(t *testing.T) {
	now := time.Unix(0, 0)
	w := learnedAt16(t, &now, 0.3)
	// Windows of 40 requests, the loop saturated, one after another.
	for _, step := range []struct {
		rtt  time.Duration
		want int
		what string
	}{
		// At 16, 62 ms: 2.5 ms of loop a request.
		{62 * time.Millisecond, 20, "saturated at 16, 2.5 ms of loop a request: a probe up"},
		{62 * time.Millisecond, 20, "the window after the probe: not judged"},
		// 20 at 66 ms: 303/s against 258/s at 16, more than the 6.25%
		// the four requests added must bring.
		{66 * time.Millisecond, 25, "20 at 66 ms: the probe kept and the next one made"},
		{66 * time.Millisecond, 25, "the window after the second probe: not judged"},
		// 25 at 82 ms: 305/s, no gain, within 1.5 times the no-load 60 ms.
		{82 * time.Millisecond, 25, "25 at 82 ms once: judged on one more window"},
		{82 * time.Millisecond, 20, "25 at 82 ms twice: the probe undone"},
	} {
		if got := backloggedWindow(w, &now, 40, step.rtt, 0.99); got != step.want {
			t.Fatalf("%s: got limit %d, want %d", step.what, got, step.want)
		}
	}

	// Four requests in a window of the saturated loop: 25 ms of it each,
	// over a quarter of their 60 ms.
	w = learnedAt16(t, &now, 0.3)
	if got := backloggedWindow(w, &now, 4, 62*time.Millisecond, 0.99); got != 14 {
		t.Errorf("saturated at 16, 25 ms of loop a request: got limit %d, want 14, cut", got)
	}
}

// A CPU-bound worker that learnt its no-load latency under load, at its
// first limit of 4 (a front started into its load), learnt four of its
// renders: its requests then use the loop for a quarter of that latency,
// and at a quarter it read as carrying many and climbed by probes (to 12
// on real Hypernova workers). Saturated, it is cut.
func TestWorkerCPUBoundBaselineLearntAtFourIsCut(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Initial: 4, Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	// Renders of 5 ms, four held: 20 ms each, 20 of them a window (the
	// loop busy all of it).
	got := backloggedWindow(w, &now, 20, 20*time.Millisecond, 0.99)
	for range 4 {
		if got > 4 {
			t.Fatalf("saturated, 5 ms of loop a request, 20 ms learnt as its no-load latency: got limit %d, want at most 4", got)
		}
		got = backloggedWindow(w, &now, 20, time.Duration(got)*5*time.Millisecond, 0.99)
	}
	if got > 2 {
		t.Errorf("after five saturated windows: limit %d, want at most 2", got)
	}
}
