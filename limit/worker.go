package limit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// WorkerOptions configures a Worker limit. The zero value is a worker that
// starts at 1 and may grow to 1000.
type WorkerOptions struct {
	// Initial is the starting limit; 0 means 1. Clamped into [1, Max].
	Initial int
	// Max is the highest limit, the most requests the worker may hold at
	// once (its configured concurrency); 0 means 1000.
	Max int
	// MaxSaturation is the reported saturation at or above which the
	// limit backs off, in (0, 1]; 0 means 0.98. A worker behind a front
	// needs no room of its own for a burst (the front queues it), so its
	// loop may be kept nearly full: at 0.95 an async worker served 5%
	// less than at a hand-tuned fixed limit, at 0.98 2% (in simulation).
	MaxSaturation float64
	// Window is how often the limit is reconsidered; 0 means WorkerWindow.
	Window time.Duration
}

// Validate reports every invalid field, one error each (errors.Join).
func (o WorkerOptions) Validate() error {
	var errs []error
	if o.Initial < 0 {
		errs = append(errs, fmt.Errorf("limit: Worker Initial %d is negative", o.Initial))
	}
	if o.Max < 0 {
		errs = append(errs, fmt.Errorf("limit: Worker Max %d is negative", o.Max))
	}
	if !(o.MaxSaturation >= 0 && o.MaxSaturation <= 1) {
		errs = append(errs, fmt.Errorf("limit: Worker MaxSaturation %v is outside [0, 1]", o.MaxSaturation))
	}
	if o.Window < 0 {
		errs = append(errs, fmt.Errorf("limit: Worker Window %v is negative", o.Window))
	}
	return errors.Join(errs...)
}

func (o WorkerOptions) withDefaults() WorkerOptions {
	if o.Max == 0 {
		o.Max = 1000
	}
	o.Initial = min(max(o.Initial, 1), o.Max)
	if o.MaxSaturation == 0 {
		o.MaxSaturation = 0.98
	}
	if o.Window == 0 {
		o.Window = WorkerWindow
	}
	return o
}

// WorkerWindow is WorkerOptions.Window's default: short enough that a
// worker whose renders become twice as slow is followed within a second
// or two (ten windows of the 10% back-off halve a limit), long enough that
// one window sees a few renders.
const WorkerWindow = 100 * time.Millisecond

// Constants of the per-worker rule.
const (
	// workerMinSamples is the fewest completions a window of a worker
	// that reports no saturation needs: its latency is the only evidence.
	workerMinSamples = 4
	// workerProbeGain is the share of a request's worth of throughput each
	// request a probe adds must bring (or a probe down may lose) for the
	// probe to be kept. Not a fixed tolerance on latency: on a busy
	// machine every request is a little slower for each one added to an
	// async worker while its throughput still grows, and such a tolerance
	// (1.5 times the no-load rtt) held those workers at a third of what
	// they served at a fixed 32.
	workerProbeGain = 0.5
	// workerTolerance is how much slower than its no-load latency a
	// worker's requests may get with a probe up kept whatever its
	// throughput did: the requests added did not queue inside it. Noise in
	// a window's throughput then cannot hold an async worker low.
	workerTolerance = 1.5
	// workerSlowStart is how near its no-load latency a worker's
	// requests must stay (through a probe up, for a worker that reports
	// nothing) for the next step to double the limit rather than add its
	// square root: an async worker far from its knee gets there in a few
	// steps.
	workerSlowStart = 1.2
	// workerProbeBusy is the share of its limit a worker must hold on
	// average for a probe down: below it the limit does not bind.
	workerProbeBusy = 0.8
	// workerRTTJump is how much slower than when its limit was last judged
	// a worker's requests may get before it is probed down at once.
	workerRTTJump = 1.5
	// workerGuardGrowth and workerGuardCut bound the saturation rule by
	// latency: a worker whose requests take more than workerGuardGrowth
	// times its no-load latency is not given more, one past workerGuardCut
	// (in two windows in a row) is given less, down to where it would be
	// at workerGuardGrowth. Loose: an async worker's latency is mostly its
	// own I/O wait plus a front's scheduling delays on a busy machine, and
	// it waits for a CPU it shares (with its neighbours, or the front)
	// more as its load grows, whatever its limit. A bound of 1.5 held such
	// workers at a third of what their event loops could take (real Node
	// workers, 60 ms waits); one of 2 held two workers sharing a CPU below
	// the limit whose throughput stops growing (their requests took 2.2
	// times their no-load latency at a fixed 32, where the throughput
	// curve flattens), and they served 4-17% less than at 3 (2026-12-04).
	workerGuardGrowth = 3
	workerGuardCut    = 3
	// workerMany and workerSatGain: a saturated worker whose requests use
	// its loop for at most 1/workerMany of their no-load latency carries
	// many at once, and past its loop's saturation its limit is found by
	// the throughput climb of a worker that reports nothing, each request
	// a probe adds (or takes away) worth workerSatGain of a request's
	// throughput: a Node worker's CPU per request keeps falling as it
	// holds more past that point (its loop's turns are shared by more
	// ready requests: 2.0 ms at 16 at once, 1.7 at 32, 1.65 at 64 on
	// next start), so its throughput still grows. Cut at saturation, such
	// workers were held at 0.88-0.96 of what HAProxy at maxconn 32 served
	// (2026-12-04), and in simulation at 0.78 of what a fixed 64 served
	// (0.96-1.0 climbing; 0.87-0.95 with workerProbeGain's 0.5). A
	// CPU-bound worker's requests use its loop for all of their latency:
	// it is cut at saturation.
	workerMany    = 4
	workerSatGain = 0.25
	// workerSerial: a worker whose requests take at least
	// 1 + workerSerial x (occupancy - 1) times their no-load latency, its
	// loop half busy or more, serves them one after another, however busy
	// the kernel reads its loop (see Worker).
	workerSerial = 0.75
	// workerAloneEvery is the least time between two of a worker's lone
	// measurements (see Worker), as Envoy's adaptive concurrency filter
	// measures its minimum latency at a few requests once a minute.
	workerAloneEvery = 30 * time.Second
	// workerSureDrift is how far an estimate under a busy loop may lower
	// a sure baseline and leave it sure.
	workerSureDrift = 0.75
	// workerAloneGap: a baseline learnt under load at least workerAloneGap
	// times the latency of the last request that began on an idle worker
	// is that of requests that queued behind each other.
	workerAloneGap = 2
	// workerLoneBusy is how busy a worker's loop must read in two
	// windows running for an upper bound of a baseline to be measured
	// alone whatever its first request took.
	workerLoneBusy = 0.8
	// workerHoldMax bounds how long a worker that reports nothing waits
	// before it probes again after probes failed.
	workerHoldMax = 5 * time.Second
)

// Worker finds the concurrency limit of one worker process that a front
// dispatches to, in [1, Max], from what its responses say: the saturation
// it reports, or else its throughput. Unlike the Algorithms, which see a
// whole process's samples, it is fed by the one caller that dispatches to
// the worker: Occupy when the requests it holds change, Report for each
// saturation report, Complete for each finished request, then Decide.
//
// Pure: time is a parameter. Create one with NewWorker; the zero value is
// not usable. Not safe for concurrent use: the caller serialises the calls
// (sluice's proxy holds its pool's mutex).
//
// When the worker reports its saturation (for Node.js, its event-loop
// utilization, on each response), an AIMD rule (AIMD's, with the guards
// below) applies once per window, with s the mean of the window's reports,
// L the limit and H what a cut applies to: L when the limit binds (peak >=
// L/2), else peak when the loop is saturated (s >= MaxSaturation) and rtt
// is over 1.5 times the baseline or the loop half busy (over this window
// and the last) and rtt over 3 times, else nothing (no cut):
//
//	baseline an upper bound, the loop half busy, a request begun on an idle worker in half of it or the loop 0.8 busy:  L = 1 until requests are answered alone
//	rtt >= baseline x (1 + 0.75 (occupancy - 1)), the loop half busy:  L = max(1, min(floor(0.9 H), floor(H x 1.75 x baseline / rtt)))
//	rtt > 3 x baseline, H known:  L = max(1, min(floor(0.9 H), floor(H x 3 x baseline / rtt)))
//	s >= MaxSaturation, H known, requests using the loop for at most baseline / 4:  the throughput climb
//	s >= MaxSaturation, H known:  L = max(1, floor(0.9 H))
//	a request timed out:  L = max(1, floor(0.9 L))
//	s < MaxSaturation and peak >= L, rtt <= 3 x baseline:  L = min(L + step, floor(MaxSaturation x occupancy / s))
//	otherwise: L holds
//
// After the first ramp, the window load arrives in after a window or more
// of idle time is not judged by a report under half busy: reports cover
// the idle time too.
//
// A baseline learnt only under load with the loop busy (or in the window
// load arrived in, its reports covering idle time) is an upper bound: the
// requests may have queued for the loop behind each other. It is sure
// once learnt with the worker holding one request at most, or under load
// with the loop under half busy (not in load's first window, whose
// reading covers the time before it too). Unsure, the loop half busy, and
// the last request that began on an idle worker (which ran alone, if the
// worker serves its requests in order) took half the baseline or less, or
// the loop read 0.8 busy in two windows running, the limit is held at 1
// until the worker has answered workerMinSamples requests alone (the
// first two lines above; at most once in workerAloneEvery), and the rule
// judges afresh from 1; or, when the first of those answers take half the
// baseline or more (requests that wait on their own), the limit it left is
// given back at once. Those
// requests are the measure a serial worker is known by: held together,
// its requests take a no-load latency for each other one ahead of them,
// a queue inside the worker that the kernel's reading of a loop sharing
// its CPU (under MaxSaturation) does not show.
//
// A limit far above what its worker holds bounds nothing: when async
// renders become CPU-bound ones, the saturated worker fills with requests
// that queue inside it long before it holds half its limit, so the cut
// applies to what it holds.
//
// A saturated worker whose requests each use its loop for a quarter of
// their no-load latency or less (the window's saturation times its
// length, shared by its completions, against baseline) is an async one,
// whose throughput may still grow past saturation: a Node worker's CPU per
// request falls as it holds more. Its limit is found by the throughput
// climb of a worker that reports nothing (below), with each request a
// probe adds bringing a quarter of a request's worth (or one it takes
// away losing at most that), and no latency tolerance: past saturation a
// request added always waits for the loop.
//
// The first line needs rtt over its bound in two windows in a row, and
// takes the lower of their two rtts: one window alone is as often a stall
// that passes by itself. After such a cut the windows that end within the
// rtt it was judged at are not judged: the requests finishing then were
// sent under the old limit, and waited behind as many others. The first
// window after them (with at least 4 completions) judges the cut: requests
// that queued inside the worker take less time at the lower limit, and
// the cut stays; if they take at least halfway between the rtt the cut was
// sized by and that rtt scaled down by the cut, and the loop was under
// half busy when it cut and now (each read over two windows), they wait
// on their own (the worker's database or an API it calls slowed down):
// that rtt becomes the baseline and the cut is undone.
//
// step is max(1, ceil(sqrt(L))); while the limit has never been cut, the
// loop is under half busy (2s < MaxSaturation) and rtt is within 1.2
// times the baseline, it is slow start instead: as TCP's, a worker that
// has just started (sluice's start, a deploy, a restart) doubles its way
// to the concurrency its loop takes, not in a second or more of
// square-root steps. Each request that finishes near the baseline while
// the worker holds its whole limit adds one (see Complete), so the limit
// doubles each round trip, up to twice the last window's limit; each
// window takes it to at least twice the limit it started at. A window in
// which the loop was under a quarter busy (4s < MaxSaturation) at the
// whole limit is slow start too, whenever it comes: twice the limit is
// still under half busy, as when CPU-bound renders become async ones.
//
// occupancy is the mean number of requests the worker held, measured
// here: the lower of this window's and the last one's, since a report
// covers the loop's last 100 ms or so and so lags a window behind a limit
// just raised (with this window's alone, a doubling projected from
// reports of half the load overshot to twice the loop's saturation);
// this window's alone when the worker held a quarter of its limit or less
// in the last one (a lull, or the window load arrived in).
// s / occupancy is the share of the event loop one request in flight
// uses, so MaxSaturation x occupancy / s is the concurrency that would
// saturate the loop: the increase stops there. A single-threaded CPU-bound worker uses its loop for as long as it holds a
// request (s ~ occupancy), so it stays at 1, where a request never waits
// inside the worker; an async worker whose requests mostly await I/O
// grows until its loop is saturated. Plain AIMD alone grows every
// limit that is reached and not yet saturated, which under light load
// drifts a CPU-bound worker to its maximum and leaves a surge to be
// queued inside it. The limit does not grow when it is not reached.
//
// The latency bounds are a guard: the mean time a request held the worker
// (rtt) against its no-load latency (baseline: the mean rtt of the last
// run of windows in which the worker never held two requests at once, or
// the lowest rtt of a window seen since, whichever is lower, each from at
// least 4 requests; so a worker that became slower for good is followed,
// steady queueing inside a worker never drags the baseline up, and one
// fast request never sets it). A loop can look idle while requests wait:
// the front, short of CPU, is slow to hand the worker its next request and
// to read its answer, and that time counts as occupancy the loop did not
// use, so the projection grows the limit; or the worker's own CPU is taken
// by its neighbours. Requests then queue inside the worker, where only latency
// shows it.
//
// When the worker reports nothing, its throughput is the evidence: it
// climbs the curve of throughput against its limit. By Little's law a
// window's throughput is X = occupancy / rtt (rtt: the mean time a request
// held the worker; occupancy as above, so the gap a single-threaded worker
// idles between a response and its next request is counted). A probe moves
// the limit by max(1, ceil(sqrt(L))), lets the requests sent before it
// complete (the windows that end within an rtt of it are not judged) and
// judges the next window: from L0 (throughput X0) to L it is kept when
//
//	X / X0 >= 1 + 0.5 x (L / L0 - 1)
//
// that is, when each request added brought at least half a request's
// worth of throughput (a step down: lost at most half of one), or, for a
// probe up, when rtt stayed within 1.5 times the no-load latency
// (baseline, as above): the requests added did not queue, and a window's
// noisy throughput does not hold an async worker low. As with a worker
// that reports, a probe up is never kept past three times the no-load
// latency, and a worker past it is probed down at once: the front's
// queue is judged against the service time (the admission Controller's
// CoDel floor), so latency bought for a little throughput would be paid
// again in the queue. A single-threaded CPU-bound worker gains nothing from a second request at
// once (its rtt doubles), so it stays at 1; an async worker gains until its
// loop is busy, or until the front and its neighbours, short of CPU, make
// every request slower by as much as a request adds: both where adding more
// only adds latency. A probe up by less than L0, or any in the first slow
// start, that fails is judged once more, on the next window, and kept if
// that one passes: such a step brings less than one window's noise, slow
// start's first windows hold a few requests each (judged on one, a
// simulated async worker whose waits varied by ±50% stayed at 1 or 2 for
// up to two seconds at 400/s), and a front short of CPU stalls now and
// then, stretching every request of a window whatever the limit (judged on
// single windows, such stalls held simulated async workers at 0.34-0.79 of
// what a fixed limit of 32 served). A failed probe is undone, the next one
// goes the other way, and it waits twice as long (up to 5 s); a kept one
// is followed by the next at once, doubling the limit (until the first
// probe fails, as TCP's slow start) while latency stays within 1.2 times
// the no-load one. A probe up needs the limit reached (peak >= L), a probe
// down a worker busy at its limit (occupancy >= 0.8 L), so that neither
// light load nor a lull walks the limit. A worker that became slower (rtt
// over 1.5 times the rtt its limit was judged at, or over three times the
// no-load latency) is probed down at once, so that a worker whose renders
// doubled is followed in a second or two rather than after the hold.
type Worker struct {
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

	baseline float64 // no-load latency, ns; 0 until known
	// baseSure: the baseline was measured with the worker holding one
	// request at most, or under load with its loop under half busy; not
	// only under load with the loop busy or not known, where it is an
	// upper bound (see Worker).
	baseSure bool
	// A lone measurement is under way (the limit held at 1 until the
	// baseline is sure), measured by the windows that start after
	// aloneFrom, and none starts before aloneNext.
	alone                bool
	aloneLimit           int     // the limit a lone measurement left
	aloneBase            float64 // and the baseline, ns
	aloneFrom, aloneNext time.Time
	serial               bool    // the last judged window's requests queued one after another
	lightSum             float64 // the rtts of the current run of windows that held one request at most, ns
	lightN               int     // and their number
	// The windows under load since the last estimate from them: their
	// rtts (ns), number, occupancies weighted by completions, windows.
	loadSum, loadOcc   float64
	loadN, loadWindows int
	loadQuiet          bool // each of them had its loop under half busy
	// idleStart: the request being held began on an idle worker, and
	// the first to finish since is taken as its latency, firstRTT (ns;
	// 0: none yet): a request that ran alone, if the worker serves its
	// requests in order.
	idleStart bool
	firstRTT  float64
	// The estimate under load gathered over more than one window at the
	// lowest occupancy since the baseline was last measured without load
	// or a window under load held eight completions: its occupancy (0:
	// none) and rtt, ns.
	sparseOcc, sparseRTT float64
	prevOcc              float64 // the last window's occupancy; -1 before the first
	lull                 bool    // the window began with load after at least a window's idle time
	ramped               bool    // slow start is over: a probe failed or the limit was cut

	// A slow start of a worker whose saturation is known grows
	// with its completions as well as once a window (see Complete).
	from   int  // the limit when the window started
	ack    bool // the last window judged slow start on: completions add slots
	ackCap int  // the limit completions may take it to
	grew   bool // completions raised the limit since Decide last said so

	// After a cut for latency of a worker that reports: windows are not
	// judged until the first that starts after cutUntil.
	cutSettle bool
	cutUntil  time.Time
	severeRTT float64 // the last judged window's rtt, ns, if over the cut's bound; else 0
	// The cut for latency is judged by the first window after it
	// settles: cutFrom is the limit it left (0: none pending), cutRTT
	// the rtt it was sized by (ns), cutTo the limit it set, cutBusy
	// whether the loop was half busy when it cut.
	cutFrom, cutTo int
	cutRTT         float64
	cutBusy        bool
	lastSat        float64 // the last window's mean report

	// The throughput climb of a worker that reports nothing.
	settle      bool      // the limit just changed: windows are not judged
	settleUntil time.Time // the last window that is not judged ends after this
	probeFrom   int       // the limit a probe left; 0: no probe pending
	probeX      float64   // the throughput at probeFrom
	probeRTT    float64   // the rtt at probeFrom, ns
	down        bool      // the next probe goes down
	fast        bool      // the last probe up left latency near no-load: double
	judgedRTT   float64   // the rtt at which the limit was last judged, ns
	second      bool      // the probe pending failed one window: one more judges it
	hold        time.Duration
	holdUntil   time.Time
}

// NewWorker returns a Worker limit at o.Initial, its first window starting
// at now, or o.Validate's error.
func NewWorker(now time.Time, o WorkerOptions) (*Worker, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	return &Worker{
		max:     o.Max,
		maxSat:  o.MaxSaturation,
		window:  o.Window,
		limit:   o.Initial,
		from:    o.Initial,
		start:   now,
		last:    now,
		hold:    o.Window,
		prevOcc: -1,
	}, nil
}

// Limit returns the current limit.
func (w *Worker) Limit() int { return w.limit }

// Ramping reports whether the limit is still in its first slow start:
// doubling from where it began (the Initial it was given), neither
// cut nor held by a failed probe yet. A front's queue built meanwhile is
// served within a window or two, as the limit catches up.
func (w *Worker) Ramping() bool { return !w.ramped }

// BadReports returns how many reports Report refused, ever.
func (w *Worker) BadReports() uint64 { return w.badReport }

// Occupy records that the worker holds n requests from now on.
//
// A window that has been idle throughout (nothing held, finished or
// reported in it) starts again when a request arrives: the occupancy the
// rule pairs with the worker's reports is that of the load, not diluted by
// the idle stretch before it. A fresh front's first window began when the
// worker was added, and load arrived half a second later: its occupancy
// read a tenth of what the worker held, and the projection of the
// concurrency that saturates the loop, 2 where it was about 20, held the
// first slow start's doublings to one a window.
func (w *Worker) Occupy(now time.Time, n int) {
	if w.held == 0 && n > 0 && w.heldTime == 0 && w.n == 0 && w.satN == 0 && !w.dropped {
		w.lull = now.Sub(w.start) >= w.window
		w.start, w.last, w.peak = now, now, 0
	}
	if d := now.Sub(w.last); d > 0 {
		w.heldTime += float64(w.held) * float64(d)
		w.last = now
	}
	if w.held == 0 && n > 0 {
		w.idleStart = true
	}
	w.held = n
	w.peak = max(w.peak, n)
}

// Report records a saturation the worker reported and reports whether it
// was taken: a value outside [0, 1] (NaN included, a report that could not
// be read) is counted (BadReports) and ignored.
func (w *Worker) Report(s float64) bool {
	if !(s >= 0 && s <= 1) {
		w.badReport++
		return false
	}
	w.satSum += s
	w.satN++
	return true
}

// Complete records a finished request: rtt is how long it held the
// worker, dropped that its client was answered a timeout before it
// finished.
//
// In a slow start of a worker whose saturation is known (see Worker), once a
// window has judged its loop under half busy, each request that finishes
// within workerSlowStart times the no-load latency while the worker held
// its whole limit adds one to the limit, up to twice the limit the last
// window set and no further than the concurrency it projected would
// saturate the loop, until a report of this window says the loop is half
// busy: as TCP's slow start grows its window by an ack, the limit doubles
// each round trip rather than each window. Judged once a window only, a
// fresh front took 520-1090 ms (median 690) to take two async Node
// workers to the 16 each that 420/s needed (60 ms waits), and half its
// starts shed a tenth of the first seconds; 370-740 ms (median 420) this
// way (internal/eval/gap/fresh-ab.sh).
func (w *Worker) Complete(rtt time.Duration, dropped bool) {
	if dropped {
		w.dropped = true
		return
	}
	w.n++
	w.sumRTT += float64(rtt)
	if w.idleStart {
		w.idleStart, w.firstRTT = false, float64(rtt)
	}
	if w.ack && w.held+1 >= w.limit && w.limit < w.ackCap && w.nearBaseline(float64(rtt), workerSlowStart) &&
		(w.satN == 0 || 2*w.satSum < w.maxSat*float64(w.satN)) {
		w.limit++
		w.grew = true
	}
}

// Decide closes the window if it is over and applies the rule. It returns
// the limit, and whether it changed since Decide last returned.
func (w *Worker) Decide(now time.Time) (int, bool) {
	grew := w.grew
	w.grew = false
	elapsed := now.Sub(w.start)
	if elapsed < w.window {
		return w.limit, grew
	}
	reported := w.satN > 0
	if !reported && !w.dropped && w.n < workerMinSamples {
		return w.limit, grew // nothing to judge yet: keep measuring
	}
	w.Occupy(now, w.held)
	occupancy := w.heldTime / float64(elapsed)
	l, peak := w.limit, w.peak
	next := l
	w.ack = false // until the rule judges slow start on again
	switch {
	case reported || w.dropped && w.n == 0:
		next = w.saturationRule(now, elapsed, l, peak, occupancy)
	default:
		next = w.latencyRule(now, l, peak, occupancy)
	}
	w.prevOcc, w.lull = occupancy, false
	next = min(max(next, 1), w.max)

	// A new window starts with what is held now.
	w.start, w.heldTime, w.peak, w.from = now, 0, w.held, next
	w.n, w.sumRTT, w.satSum, w.satN, w.dropped = 0, 0, 0, 0, false
	w.limit = next
	return next, next != l || grew
}

func (w *Worker) saturationRule(now time.Time, elapsed time.Duration, l, peak int, occupancy float64) int {
	if w.dropped || w.satN == 0 {
		w.ramped = true
		return int(math.Floor(0.9 * float64(l)))
	}
	s := w.satSum / float64(w.satN)
	// The worker's latency guards the rule: a worker whose requests take
	// workerGuardGrowth times its no-load latency queues them inside, whatever
	// its loop says (a loop that looks idle because the
	// front is slow to feed it, a worker whose own CPU is stolen).
	inflated, severe, rtt := false, false, 0.0
	if w.n > 0 {
		rtt = w.sumRTT / float64(w.n)
		// The window load arrived in (after idle time, or the worker's
		// first) has reports that cover the time before it: a low one
		// does not say its loop was under half busy.
		w.learnBaseline(peak, occupancy, 2*s < w.maxSat && !w.lull && w.prevOcc >= 0)
		inflated = w.guarded(rtt, workerGuardGrowth)
		severe = w.guarded(rtt, workerGuardCut)
	}
	if w.lull && w.ramped && 2*s < w.maxSat {
		// The window load arrived in after a window or more of idle time
		// (a lull between bursts): its reports cover the idle time too
		// (an event loop's utilization since its last report, a kernel
		// reading since the last), and a low one says nothing of the room
		// the loop has under the load. Taken as evidence, it doubled a
		// CPU-bound worker's limit of 1 at the start of every burst (slow
		// start: the loop read under a quarter busy), which queued
		// requests inside it until the next windows cut it back. A high
		// report is evidence, since idle time can only lower it, and so
		// is the window's latency (learnt above). Not in the first ramp,
		// which knows nothing yet and doubles on what it is told: held a
		// window, a fresh front's async workers served 4% less of their
		// first 5 s at 1.2x.
		return l
	}
	// Whether the loop is half busy is read over this window and the last:
	// two overloaded workers sharing a CPU reported 0.45 and 0.95 in
	// turns, window after window.
	busy := 2*max(s, w.lastSat) >= w.maxSat
	loaded := min(s, w.lastSat) >= workerLoneBusy
	w.lastSat = s
	if w.cutSettle {
		// The requests that complete for a while after a cut were sent
		// under the limit cut, and waited inside the worker behind as many
		// others: judged on them, the guard would cut again for latency
		// the cut has already removed (measured on real Node workers: 35
		// to 20 to 9 in two windows).
		w.cutSettle = now.Before(w.cutUntil)
		return l
	}
	if from := w.cutFrom; from > 0 && w.n >= workerMinSamples {
		w.cutFrom = 0
		// Requests that queued inside the worker take less time once it
		// holds fewer (at the same throughput, rtt falls with the limit,
		// to about cutTo/cutFrom of what it was); a worker whose
		// requests wait longer on their own (its database slowed down)
		// takes as long with fewer, and only serves fewer, its loop idle.
		// That latency is its no-load latency now: the cut is undone.
		// Kept, such cuts took simulated async workers whose waits grew
		// fourfold from 34 to 7, and real Node workers from 20 to 2 (28%
		// of 300/s served, HAProxy at a fixed 32 83%). Only a loop under
		// half busy when the cut was made and now (each over two
		// windows) is undone so: a busier one's requests do queue,
		// though their latency may not show it yet (a backlog the cut has
		// not bounded, as when async renders become CPU-bound ones) or
		// not clearly (two workers overloaded on one CPU, the rtt as
		// noisy as the cut is deep).
		if !busy && !w.cutBusy && rtt >= w.cutRTT*(1+float64(w.cutTo)/float64(from))/2 {
			w.baseline, w.baseSure, w.severeRTT = rtt, true, 0
			return max(from, l)
		}
	}
	// A no-load latency learnt only under load with the loop busy is an
	// upper bound: requests that queued for the loop, a CPU-bound
	// worker's behind the others it held, as when a front starts into its
	// load at its first limit of 4 (the baseline four renders). Read so,
	// the latency guard is blind, and a CPU-bound worker's requests seem
	// to use the loop for a quarter of their latency, an async worker's:
	// its limit climbed by throughput probes (real Hypernova workers, 8
	// to 12 for a whole run) or sat at 4-5 with every request queued
	// behind four others, the kernel reading its shared CPU under
	// MaxSaturation (0.55-0.92). The request that began on the idle
	// worker ran alone, if the worker serves its requests in order: when
	// it took half the baseline or less, the others queued behind each
	// other; so may they have when the loop reads workerLoneBusy in two
	// windows running (a worker that interleaves its requests, as
	// Hypernova does a batch through promises, finished the four a fresh
	// front sent at once together). The limit is then held at 1 until the
	// worker has answered workerMinSamples requests alone, as Envoy's
	// adaptive concurrency filter measures its minimum latency at a few
	// requests, and the rule judges afresh from 1: a CPU-bound worker
	// loses nothing so. But when its first lone answers take half the
	// baseline or more, its requests wait on their own (an async worker's,
	// whose loop read 0.5-0.66 at 4-10 requests on a slow machine, and
	// more nearer its saturation) and the limit it left is given back at
	// once: held at 1 for four answers, such workers served 600/s for a
	// fresh front's first quarter second, then nothing for the next.
	// Once in workerAloneEvery at most.
	if w.alone {
		lone := 0.0
		switch {
		case w.baseSure:
			lone = w.baseline
		case w.lightN > 0:
			lone = w.lightSum / float64(w.lightN)
		}
		switch {
		case lone > 0 && workerAloneGap*lone >= w.aloneBase:
			// Alone, its requests take about as long as they did under
			// load: they wait on their own (an async worker's), and the
			// baseline was near its no-load latency. Its first lone
			// answers decide: the limit is given back at once.
			w.alone, w.baseSure = false, true
			return max(w.aloneLimit, 1)
		case !w.baseSure:
			return 1
		}
		w.alone = false
	} else if busy && !w.baseSure && w.baseline > 0 && (w.firstRTT > 0 && workerAloneGap*w.firstRTT <= w.baseline || loaded) &&
		l > 1 && peak > 1 && !now.Before(w.aloneNext) {
		w.aloneLimit, w.aloneBase = l, w.baseline
		// The requests it holds were sent under the old limit and queued
		// behind each other: they drain for about a window's rtt, and a
		// front that counts at most the limit's worth as held (sluice's
		// does) would have them measured as alone.
		w.alone, w.ramped = true, true
		w.aloneFrom, w.aloneNext = now.Add(time.Duration(rtt)), now.Add(workerAloneEvery)
		w.severeRTT, w.cutFrom, w.serial = 0, 0, false
		return 1
	}
	// The first ramp starts at a few requests (the proxy's first limit),
	// before anything is known of the worker. One whose loop is half busy
	// though it never held its whole limit renders what it holds: a
	// single-threaded renderer at capacity holds one request at a time.
	// Left at its first limit, it took four at an overload's onset, three
	// of them queued inside it where no queue bound sees them (two Node
	// workers rendering pages of 80-130 ms of CPU: a p99 of 909 ms at 2x
	// against HAProxy's 745). Its limit comes down to the concurrency its reports
	// project saturates the loop, at least 1, and the first ramp is over.
	// Only for a worker that held under two requests on average: an async
	// worker's loop is half busy only once it holds many, and its ramp
	// goes on (cut to the projection, an async worker in simulation climbed
	// back too slowly when its waits then grew fourfold).
	if !w.ramped && busy && peak < l && s > 0 && occupancy < 2 {
		if to := max(1, int(math.Floor(w.maxSat*occupancy/s))); to < l {
			w.ramped = true
			return to
		}
	}
	// A cut for latency needs two windows in a row over the bound: one
	// alone is as often a stall (a collection, the neighbour on the core
	// taking a turn) that passes by itself, and the cut, sized by the
	// window's latency, took the limit below what the worker had been
	// serving. It is sized by the lower of the two.
	// A cut applies to the limit when it binds (the worker held half of
	// it or more), else to what the worker held, once its requests queue
	// inside it: its loop saturated and its requests slower than
	// workerTolerance times the no-load latency, or its loop half busy
	// or more and its requests past the guard's bound (a loop that
	// shares its CPU with a neighbour reads 0.93-0.97 as the kernel
	// measures it, though CPU-bound). A limit far above what a worker
	// holds bounds nothing: cut by a tenth a window once it bound, it
	// took two seconds to come down to the load when async renders
	// became CPU-bound ones (real Node workers, 57 to 14, every request
	// 200-860 ms meanwhile).
	held := l
	if 2*peak < l {
		held = 0
		if s >= w.maxSat && !w.nearBaseline(rtt, workerTolerance) || busy && severe {
			held = peak
		}
	}
	prevSevere := w.severeRTT
	w.severeRTT = 0
	if severe && held > 0 {
		w.severeRTT = rtt
	}
	// Requests that take as long as the others the worker held ahead of
	// them (three quarters of a no-load latency each, or more) are served
	// one after another: the worker is saturated, whatever the kernel
	// reads of a loop that shares its CPU (0.72-0.97 for CPU-bound
	// Hypernova workers, never MaxSaturation), and requests it holds
	// beyond one only wait inside it. An async worker's requests, which
	// wait on their own, take little longer for being held together.
	// Two windows in a row, as a cut for latency; to where its requests
	// would take 1 + workerSerial no-load latencies.
	prevSerial := w.serial
	w.serial = w.baseSure && busy && w.baseline > 0 && occupancy >= 2 && rtt >= w.baseline*(1+workerSerial*(occupancy-1))
	switch {
	case w.serial && prevSerial:
		w.ramped, w.serial, w.severeRTT = true, false, 0
		h := held
		if h == 0 {
			h = peak
		}
		w.cutSettle, w.cutUntil = true, now.Add(time.Duration(rtt))
		return max(1, min(int(math.Floor(0.9*float64(h))), int(math.Floor(float64(h)*(1+workerSerial)*w.baseline/rtt))))
	case w.severeRTT > 0 && prevSevere > 0:
		w.ramped, w.severeRTT = true, 0
		judged := min(rtt, prevSevere)
		w.cutSettle, w.cutUntil = true, now.Add(time.Duration(rtt))
		to := max(1, min(int(math.Floor(0.9*float64(held))), int(math.Floor(float64(held)*workerGuardGrowth*w.baseline/judged))))
		w.cutFrom, w.cutTo, w.cutRTT, w.cutBusy = l, to, judged, busy
		return to
	case s >= w.maxSat && held > 0 && w.carriesMany(s, elapsed):
		w.ramped = true
		return w.climb(now, l, peak, occupancy, rtt, true)
	case s >= w.maxSat && held > 0:
		w.ramped = true
		return int(math.Floor(0.9 * float64(held)))
	case s < w.maxSat && peak >= l && !inflated:
		up := l + max(1, int(math.Ceil(math.Sqrt(float64(l)))))
		// Slow start: the first (see above), and any window in which
		// the loop was under a quarter busy at the whole limit, as when
		// CPU-bound renders became async ones: twice the limit is then
		// still under half busy, and by square-root steps an async worker
		// took a second to climb back from a CPU-bound workload's 1 or 2.
		slow := 2*s < w.maxSat && (!w.ramped && w.nearBaseline(rtt, workerSlowStart) || 4*s < w.maxSat)
		// The first ramp goes on doubling, up to the ceiling below (the
		// concurrency the reports project saturates the loop), while the
		// requests stay within workerTolerance of the no-load latency,
		// though the loop is half busy or they are a little slower: two
		// async Node workers on one core each wait for the other's turns
		// as their load grows, and by square-root steps they took
		// 0.55-0.65 s to climb from 14 to 40 against 0.2-0.25 s so (a
		// fresh front, shedding what arrived meanwhile). Only slow start
		// proper grows with completions (ack).
		if slow || !w.ramped && w.nearBaseline(rtt, workerTolerance) {
			// At least double the limit the window started at: its
			// completions may have raised it already.
			up = max(l+1, 2*w.from)
		}
		ceiling := w.max
		if s > 0 {
			occ := occupancy
			if w.prevOcc >= float64(l)/4 {
				// A window in which the worker held a quarter of its
				// limit or less was a lull, or the one load arrived in
				// (the first after a start): its occupancy says nothing
				// of the load the reports cover, and taken as that load
				// it held a fresh front's workers at their first limit
				// for a window.
				occ = min(occ, w.prevOcc)
			}
			ceiling = max(int(math.Floor(w.maxSat*occ/s)), l)
			up = min(up, ceiling)
		}
		// Completions take it no further than double this window's
		// limit by the end of the next: a worker's reports lag its load
		// by a window (an event loop's utilization over its last 100 ms),
		// and unbounded per round trip they took simulated async workers
		// to twice the concurrency that saturated their loops.
		w.ack, w.ackCap = slow, min(ceiling, 2*up, w.max)
		return up
	}
	return l
}

func (w *Worker) latencyRule(now time.Time, l, peak int, occupancy float64) int {
	if w.dropped {
		// A request outlived its budget: back off, and judge afresh.
		w.probeFrom, w.second, w.fast, w.ramped = 0, false, false, true
		w.settleFor(now, w.judgedRTT)
		w.probeFailed(now)
		return int(math.Floor(0.9 * float64(l)))
	}
	rtt := w.sumRTT / float64(w.n)
	w.learnBaseline(peak, occupancy, false)
	return w.climb(now, l, peak, occupancy, rtt, false)
}

// climb is the throughput climb (see Worker) of a window with completions
// of mean rtt: of a worker that reports nothing, or of a saturated one
// that carries many requests at once, which no latency tolerance keeps a
// probe up for and whose probes are judged by workerSatGain.
func (w *Worker) climb(now time.Time, l, peak int, occupancy, rtt float64, saturated bool) int {
	if w.settle {
		// The requests that complete for a while after a change were sent
		// under the old limit (or waited behind those that were): the
		// first window that starts a whole rtt after it is judged.
		w.settle = now.Before(w.settleUntil)
		return l
	}
	x := occupancy / rtt
	if from := w.probeFrom; from > 0 {
		w.probeFrom = 0
		gain := workerProbeGain
		if saturated {
			gain = workerSatGain
		}
		want := 1 + gain*(float64(l)/float64(from)-1)
		up := l > from
		// Past saturation a request added always waits for the loop:
		// only what it gains keeps it.
		near := up && !saturated && w.nearBaseline(rtt, workerTolerance)
		gained := x >= want*w.probeX && (!up || !w.guarded(rtt, workerGuardGrowth))
		if near || gained {
			w.second = false
			// Kept: the next probe, the same way, at once.
			w.hold, w.holdUntil = w.window, now
			w.judgedRTT, w.down = rtt, l < from
			// Far from queueing: the next step doubles the limit.
			w.fast = up && !w.ramped && w.nearBaseline(rtt, workerSlowStart)
			return w.probe(now, l, peak, x, rtt, occupancy >= workerProbeBusy*float64(l), false)
		}
		if up && (l < 2*from || !w.ramped) && !w.second {
			// A step up by less than the limit brings less than one
			// window's noise (a stall of the front's stretches every
			// request in it), and slow start's first doublings are
			// judged on a few requests each: a second window judges
			// again.
			w.second, w.probeFrom = true, from
			return l
		}
		w.second = false
		w.fast, w.ramped = false, true
		// Failed: back to from, whose rtt is the one to judge by from now
		// on (a worker slower for good is not probed down again and
		// again); the next probe goes the other way, later.
		w.down = l > from
		w.judgedRTT = w.probeRTT
		w.probeFailed(now)
		w.settleFor(now, rtt)
		return from
	}
	if w.judgedRTT == 0 {
		w.judgedRTT = rtt
	}
	busy := occupancy >= workerProbeBusy*float64(l)
	slower := busy && (rtt > workerRTTJump*w.judgedRTT || w.guarded(rtt, workerGuardCut))
	if now.Before(w.holdUntil) && !slower {
		return l
	}
	return w.probe(now, l, peak, x, rtt, busy, slower)
}

// probe starts a probe from l, at throughput x, if one is due: down when
// the worker is busy at its limit and the last probe up failed or it became
// slower, else up when the limit was reached. It returns the limit to try.
func (w *Worker) probe(now time.Time, l, peak int, x, rtt float64, busy, slower bool) int {
	step := max(1, int(math.Ceil(math.Sqrt(float64(l)))))
	var next int
	switch {
	case l > 1 && busy && (w.down || slower):
		next = l - min(step, l-1)
	case peak >= l && l < w.max:
		if w.fast {
			step = l
		}
		next = min(l+step, w.max)
	default:
		return l
	}
	w.probeFrom, w.probeX, w.probeRTT = l, x, rtt
	// Requests sent after a step up may wait behind the added ones: as
	// long as next/l rtts where the worker gains nothing from them.
	w.settleFor(now, rtt*max(1, float64(next)/float64(l)))
	return next
}

// settleFor leaves the windows that end within rtt of now unjudged.
func (w *Worker) settleFor(now time.Time, rtt float64) {
	w.settle, w.settleUntil = true, now.Add(time.Duration(rtt))
}

// learnBaseline learns the no-load latency from a window's completions
// (occupancy: the requests the worker held on average): it is the mean
// latency of the last run of windows in which the worker never held two
// requests at once, once that run has workerMinSamples completions, so
// that a worker that became slower for good is followed; or a lower mean
// of windows under load with as many completions. The samples keep one odd
// request from setting it: a health check or a cached page through the
// front, answered in a millisecond, alone in a window, made every request
// after it look queued for as long as the worker stayed busy, and the
// guard cut its limit (measured on real Node workers, a baseline of 35 ms
// for 65 ms requests).
//
// Under load the samples are gathered over as many windows as they take:
// a worker whose requests take 40 ms or more finishes fewer than
// workerMinSamples in one, and judged on single windows it had no
// baseline, so no guard, as long as it was never idle (two Hypernova
// workers rendering 600 KB pages on two cores shared with the front: the
// kernel read their loops 0.7-0.85 busy while they held 27 requests each,
// and they served 30/s of the 53 they served one at a time). Such a mean
// under load is no no-load latency: its requests queued inside the worker
// behind the others it held. Where two such means, gathered over more than
// one window each, were held at occupancies half again apart (the lowest
// since the last baseline measured without load, and the latest), the
// latency of one request alone is read off the line through them (see
// loneLatency). Only while no window under load held eight completions: a
// fast worker's windows are short of four only in a stall (the front's
// CPU taken for a moment), whose latency grows with whatever the worker
// held, and read so, a fresh front's async workers were cut for latency
// now and then.
func (w *Worker) learnBaseline(peak int, occupancy float64, quiet bool) {
	if peak <= 1 {
		w.loadSum, w.loadN, w.loadOcc, w.loadWindows = 0, 0, 0, 0
		if w.alone && w.start.Before(w.aloneFrom) {
			return
		}
		w.lightSum += w.sumRTT
		w.lightN += w.n
		if w.lightN >= workerMinSamples {
			w.baseline, w.baseSure = w.lightSum/float64(w.lightN), true
			w.lightSum, w.lightN = 0, 0
			w.sparseOcc, w.sparseRTT = 0, 0
		}
		return
	}
	w.lightSum, w.lightN = 0, 0
	if w.loadWindows == 0 {
		w.loadQuiet = true
	}
	w.loadSum += w.sumRTT
	w.loadN += w.n
	w.loadOcc += occupancy * float64(w.n)
	w.loadWindows++
	w.loadQuiet = w.loadQuiet && quiet
	if w.loadN < workerMinSamples {
		return
	}
	rtt := w.loadSum / float64(w.loadN)
	occ := w.loadOcc / float64(w.loadN)
	sparse := w.loadWindows > 1
	quiet = w.loadQuiet
	w.loadSum, w.loadN, w.loadOcc, w.loadWindows = 0, 0, 0, 0
	est := rtt
	switch {
	case !sparse && w.n >= 2*workerMinSamples:
		// Eight in one window: not a slow worker, or no longer. A window
		// short of completions is then a stall (the front's, or the
		// worker's), whose latency says nothing of what it holds. (A
		// slow worker's completions bunch after a stall of its own: four
		// in a window now and then.)
		w.sparseOcc, w.sparseRTT = 0, 0
	case !sparse:
	case w.sparseOcc == 0 || occ < w.sparseOcc:
		w.sparseOcc, w.sparseRTT = occ, rtt
	default:
		est = min(est, loneLatency(w.sparseOcc, w.sparseRTT, occ, rtt))
	}
	switch {
	case w.baseline == 0:
		w.baseline, w.baseSure = est, quiet
	case est < w.baseline:
		// A busy loop's estimate is an upper bound: one that lowers a
		// sure baseline by a little is noise (an async worker's waits
		// vary by a fifth or more), by more a worker that became faster,
		// not known how much.
		w.baseSure = quiet || w.baseSure && est >= workerSureDrift*w.baseline
		w.baseline = est
	case quiet:
		w.baseSure = true
	}
}

// loneLatency returns the latency of one request held alone, read off the
// line through two (occupancy, mean latency) points of a worker under
// load, or the lower latency when the line says nothing: occupancies less
// than half again apart, or latency that grew by less than three quarters
// as much as occupancy did (an async worker's requests wait on their own,
// not behind each other, and a mean of a few of its waits varies by a
// fifth or more: read as a line, that noise took a slow async worker's
// baseline to a fraction of its waits). A worker whose requests queue
// behind each other (rtt = occupancy x S for a single-threaded CPU-bound
// one) extrapolates to S, and no lower than the lower point's latency
// shared by the requests it held.
func loneLatency(o1, r1, o2, r2 float64) float64 {
	if o1 > o2 {
		o1, r1, o2, r2 = o2, r2, o1, r1
	}
	if o2 < 1.5*o1 || r2/r1-1 < 0.75*(o2/o1-1) {
		return min(r1, r2)
	}
	slope := (r2 - r1) / (o2 - o1)
	return max(r1-slope*max(o1-1, 0), r1/max(o1, 1))
}

// carriesMany reports whether the worker's requests use its loop for a
// quarter of their no-load latency or less: the loop time per request of
// the window (s its saturation over elapsed, shared by its completions)
// against the baseline.
func (w *Worker) carriesMany(s float64, elapsed time.Duration) bool {
	return w.n >= workerMinSamples && w.baseline > 0 && workerMany*s*float64(elapsed) <= w.baseline*float64(w.n)
}

// guarded reports whether rtt is over k times the no-load latency, false
// while that is not known yet.
func (w *Worker) guarded(rtt, k float64) bool { return w.baseline > 0 && rtt > k*w.baseline }

// nearBaseline reports whether rtt is within k times the no-load latency,
// true while that is not known yet: no evidence of queueing.
func (w *Worker) nearBaseline(rtt, k float64) bool { return w.baseline == 0 || rtt <= k*w.baseline }

// probeFailed backs the next probe off.
func (w *Worker) probeFailed(now time.Time) {
	w.hold = min(2*w.hold, workerHoldMax)
	w.holdUntil = now.Add(w.hold)
}
