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
