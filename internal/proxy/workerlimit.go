package proxy

import (
	"math"
	"strconv"
	"time"
)

// HeaderSaturation is the response header in which a worker reports how
// saturated it is, a decimal in [0, 1]: for Node.js, its event-loop
// utilization over the last 100 ms or so (node/sluice-worker sets it). The
// proxy reads it, feeds it to the worker's limit and removes it before the
// client sees the response.
const HeaderSaturation = "Sluice-Saturation"

// WorkerLimit configures the per-worker concurrency limit of adaptive
// endpoints (supervisor.Endpoint.Adaptive). The zero value is usable.
type WorkerLimit struct {
	// MaxSaturation is the reported saturation at or above which a
	// worker's limit backs off, in (0, 1]. Zero means 0.95: an event loop
	// busy 95% of the time has no room left for a burst.
	MaxSaturation float64
	// Window is how often each worker's limit is reconsidered. Zero
	// means DefaultWorkerLimitWindow.
	Window time.Duration
}

// DefaultWorkerLimitWindow is WorkerLimit.Window's default: short enough
// that a worker whose renders become twice as slow is followed within a
// second or two (ten windows of the 10% back-off halve a limit),
// long enough that one window sees a few renders.
const DefaultWorkerLimitWindow = 100 * time.Millisecond

// Constants of the per-worker rule.
const (
	// gradientTolerance is how much slower than its no-load latency a
	// worker that reports no saturation may get before its limit shrinks.
	gradientTolerance = 1.5
	// gradientMinSamples is the fewest completions a window of a worker
	// that reports no saturation needs: its latency is the only evidence.
	gradientMinSamples = 4
	// guardGrowth and guardCut bound the saturation rule by latency: a
	// worker whose requests take guardGrowth times its no-load latency is
	// not given more, one at guardCut is given less. Looser than the
	// latency rule's tolerance: an async worker's latency is mostly its own
	// I/O wait plus a front's scheduling delays on a busy machine, and the
	// 1.5 of the latency rule held such workers at a third of what their
	// event loops could take (measured on real Node workers, 60 ms waits).
	guardGrowth = 2
	guardCut    = 3
	// probeHoldMax bounds how long a latency-judged worker waits before it
	// probes a higher limit again after a probe failed.
	probeHoldMax = 5 * time.Second
)

// workerLimit finds one worker's concurrency limit, in [1, max], from what
// its responses say. Pure: time is a parameter; not safe for concurrent
// use (the pool calls it under its mutex).
//
// When the worker reports its saturation (HeaderSaturation), an AIMD rule
// (limit.AIMD's, with the guards below) applies once per window, with s the mean of the window's
// reports and L the limit:
//
//	rtt > 3 x baseline and peak >= L/2:  L = max(1, min(floor(0.9 L), floor(L x 2 x baseline / rtt)))
//	s >= MaxSaturation and peak >= L/2, or a request timed out:  L = max(1, floor(0.9 L))
//	s < MaxSaturation and peak >= L, rtt <= 2 x baseline:  L = min(L + max(1, ceil(sqrt(L))), floor(MaxSaturation x occupancy / s))
//	otherwise: L holds
//
// occupancy is the mean number of requests the worker held during the
// window, measured here. s / occupancy is the share of the event loop one
// request in flight uses, so MaxSaturation x occupancy / s is the
// concurrency that would saturate the loop: the increase stops there. A
// single-threaded CPU-bound worker uses its loop for as long as it holds a
// request (s ~ occupancy), so it stays at 1, where a request never waits
// inside the worker; an async worker whose requests mostly await I/O
// grows until its loop is saturated. Plain AIMD alone grows every
// limit that is reached and not yet saturated, which under light load
// drifts a CPU-bound worker to its maximum and leaves a surge to be
// queued inside it. The limit does not grow when it is not reached.
//
// The latency bounds are a guard: the mean time a request held the worker
// (rtt) against its no-load latency (baseline, as below). A loop can look idle
// while requests wait: the front, short of CPU, is slow to hand the
// worker its next request and to read its answer, and that time counts as
// occupancy the loop did not use, so the projection grows the limit; or
// the worker's own CPU is taken by its neighbours. Requests then queue
// inside the worker, where only latency shows it.
//
// When the worker reports nothing, its latency is the evidence: the mean
// time a request holds the worker (rtt) over a window of at least
// gradientMinSamples completions, against the no-load latency (baseline:
// the rtt of the last window in which the worker never held two requests
// at once, or the lowest rtt seen since, whichever is lower; so a worker
// that became slower for good is followed, and steady queueing inside a
// worker never drags the baseline up):
//
//	rtt > gradientTolerance x baseline and peak >= L/2:  L = max(1, floor(L x gradientTolerance x baseline / rtt))
//	rtt <= gradientTolerance x baseline and peak >= L, hold over:  L = L + max(1, ceil(sqrt(L)))
//
// A step up whose next window shrinks the limit again was a failed probe:
// the next probe waits twice as long (up to probeHoldMax), so a CPU-bound
// worker spends most of its time at 1.
type workerLimit struct {
	max    int
	maxSat float64
	window time.Duration
	limit  int

	start     time.Time // of the current window
	last      time.Time // of the last occupancy change
	held      int       // requests held since last
	heldTime  float64   // integral of held over the window, in ns
	peak      int
	n         int     // completions in the window
	sumRTT    float64 // ns
	satSum    float64
	satN      int
	dropped   bool
	badReport uint64 // reports outside [0, 1] or malformed, ever

	baseline  float64 // no-load latency, ns; 0 until known
	probed    bool    // the last change was a latency probe up
	hold      time.Duration
	holdUntil time.Time
}

func newWorkerLimit(now time.Time, initial, max int, o WorkerLimit) *workerLimit {
	if o.MaxSaturation == 0 {
		o.MaxSaturation = 0.95
	}
	if o.Window == 0 {
		o.Window = DefaultWorkerLimitWindow
	}
	return &workerLimit{
		max:    max,
		maxSat: o.MaxSaturation,
		window: o.Window,
		limit:  min(max, initial),
		start:  now,
		last:   now,
		hold:   o.Window,
	}
}

// occupy records that the worker holds n requests from now on.
func (w *workerLimit) occupy(now time.Time, n int) {
	if d := now.Sub(w.last); d > 0 {
		w.heldTime += float64(w.held) * float64(d)
		w.last = now
	}
	w.held = n
	w.peak = max(w.peak, n)
}

// parseSaturation reads a HeaderSaturation value: a number in [0, 1].
func parseSaturation(v string) (float64, bool) {
	s, err := strconv.ParseFloat(v, 64)
	if err != nil || !(s >= 0 && s <= 1) { // also rejects NaN
		return 0, false
	}
	return s, true
}

// report records a HeaderSaturation value the worker sent; ok false means
// it could not be read, and it is counted and ignored.
func (w *workerLimit) report(s float64, ok bool) {
	if !ok {
		w.badReport++
		return
	}
	w.satSum += s
	w.satN++
}

// complete records a finished request: rtt is how long it held the
// worker, dropped that its client was answered 504 before it finished.
func (w *workerLimit) complete(rtt time.Duration, dropped bool) {
	if dropped {
		w.dropped = true
		return
	}
	w.n++
	w.sumRTT += float64(rtt)
}

// decide closes the window if it is over and applies the rule. It returns
// the limit, and whether it changed.
func (w *workerLimit) decide(now time.Time) (int, bool) {
	elapsed := now.Sub(w.start)
	if elapsed < w.window {
		return w.limit, false
	}
	reported := w.satN > 0
	if !reported && !w.dropped && w.n < gradientMinSamples {
		return w.limit, false // nothing to judge yet: keep measuring
	}
	w.occupy(now, w.held)
	occupancy := w.heldTime / float64(elapsed)
	l, peak := w.limit, w.peak
	next := l
	switch {
	case reported || w.dropped && w.n == 0:
		next = w.saturationRule(l, peak, occupancy)
	default:
		next = w.latencyRule(now, l, peak)
	}
	next = min(max(next, 1), w.max)

	// A new window starts with what is held now.
	w.start, w.heldTime, w.peak = now, 0, w.held
	w.n, w.sumRTT, w.satSum, w.satN, w.dropped = 0, 0, 0, 0, false
	if next == l {
		return l, false
	}
	w.limit = next
	return next, true
}

func (w *workerLimit) saturationRule(l, peak int, occupancy float64) int {
	if w.dropped || w.satN == 0 {
		return int(math.Floor(0.9 * float64(l)))
	}
	s := w.satSum / float64(w.satN)
	// The worker's latency guards the rule: a worker whose requests take
	// guardGrowth times its no-load latency queues them inside, whatever
	// its loop says (a loop that looks idle because the
	// front is slow to feed it, a worker whose own CPU is stolen).
	inflated, severe, rtt := false, false, 0.0
	if w.n > 0 {
		rtt = w.sumRTT / float64(w.n)
		w.learnBaseline(rtt, peak)
		inflated = rtt > guardGrowth*w.baseline
		severe = rtt > guardCut*w.baseline
	}
	switch {
	case severe && 2*peak >= l:
		return min(int(math.Floor(0.9*float64(l))), int(math.Floor(float64(l)*guardGrowth*w.baseline/rtt)))
	case s >= w.maxSat && 2*peak >= l:
		return int(math.Floor(0.9 * float64(l)))
	case s < w.maxSat && peak >= l && !inflated:
		up := l + max(1, int(math.Ceil(math.Sqrt(float64(l)))))
		if s > 0 {
			fill := int(math.Floor(w.maxSat * occupancy / s))
			up = min(up, max(fill, l))
		}
		return up
	}
	return l
}

func (w *workerLimit) latencyRule(now time.Time, l, peak int) int {
	if w.dropped {
		w.probeFailed(now)
		return int(math.Floor(0.9 * float64(l)))
	}
	rtt := w.sumRTT / float64(w.n)
	w.learnBaseline(rtt, peak)
	wasProbe := w.probed
	w.probed = false
	switch {
	case rtt > gradientTolerance*w.baseline && 2*peak >= l:
		if wasProbe {
			w.probeFailed(now)
		}
		return int(math.Floor(float64(l) * gradientTolerance * w.baseline / rtt))
	case peak >= l && !now.Before(w.holdUntil):
		if wasProbe {
			w.hold = w.window // the last probe held: probe freely
		}
		w.probed = true
		return l + max(1, int(math.Ceil(math.Sqrt(float64(l)))))
	}
	return l
}

// learnBaseline takes a window's mean latency as the no-load latency when
// it is the lowest seen, or when the worker never held two requests at once.
func (w *workerLimit) learnBaseline(rtt float64, peak int) {
	if w.baseline == 0 || rtt < w.baseline || peak <= 1 {
		w.baseline = rtt
	}
}

// probeFailed backs the next latency probe off.
func (w *workerLimit) probeFailed(now time.Time) {
	w.hold = min(2*w.hold, probeHoldMax)
	w.holdUntil = now.Add(w.hold)
}
