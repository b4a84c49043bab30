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
	// 40 requests of 62 ms in the window at 16, the loop saturated:
	// 2.5 ms of it each.
	if got := backloggedWindow(w, &now, 40, 62*time.Millisecond, 0.99); got != 20 {
		t.Fatalf("saturated at 16, 2.5 ms of loop a request: got limit %d, want 20, a probe up", got)
	}
	if got := backloggedWindow(w, &now, 40, 62*time.Millisecond, 0.99); got != 20 {
		t.Fatalf("the window after the probe: got limit %d, want 20, not judged", got)
	}
	// 20 at 66 ms: 303/s against 258/s at 16, more than the 6.25% the
	// four requests added must bring.
	if got := backloggedWindow(w, &now, 40, 66*time.Millisecond, 0.99); got != 25 {
		t.Fatalf("20 at 66 ms: got limit %d, want 25, the probe kept and the next one made", got)
	}
	if got := backloggedWindow(w, &now, 40, 66*time.Millisecond, 0.99); got != 25 {
		t.Fatalf("the window after the second probe: got limit %d, want 25, not judged", got)
	}
	// 25 at 82 ms: 305/s, no gain, within 1.5 times the no-load 60 ms.
	if got := backloggedWindow(w, &now, 40, 82*time.Millisecond, 0.99); got != 25 {
		t.Fatalf("25 at 82 ms once: got limit %d, want 25, judged on one more window", got)
	}
	if got := backloggedWindow(w, &now, 40, 82*time.Millisecond, 0.99); got != 20 {
		t.Fatalf("25 at 82 ms twice: got limit %d, want 20, the probe undone", got)
	}

	// Four requests in a window of the saturated loop: 25 ms of it each,
	// over a quarter of their 60 ms.
	w = learnedAt16(t, &now, 0.3)
	if got := backloggedWindow(w, &now, 4, 62*time.Millisecond, 0.99); got != 14 {
		t.Errorf("saturated at 16, 25 ms of loop a request: got limit %d, want 14, cut", got)
	}
}
