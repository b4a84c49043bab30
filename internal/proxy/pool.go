package proxy

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/upstream"
	"github.com/sluicehq/sluice/limit"
)

var (
	errNoWorker = errors.New("proxy: no worker")
	errNoSlot   = errors.New("proxy: no idle worker slot in time")
)

// endpoint is a worker as the pool tracks it.
type endpoint struct {
	supervisor.Endpoint
	host string // the URL host of requests to it: their Host when the client sent none
	// client is the connection to the worker. The proxy uses it through
	// RoundTrip and Resume (with the exchange's upstream.Call), CloseIdle
	// and Broken; a concrete type, not an interface, so that the call per
	// request is a direct one.
	client *upstream.Client
	added  time.Time
	demand *demandFeed // nil: the kernel is not asked (see Options.WorkerDemand)

	served   atomic.Uint64
	failures atomic.Uint64

	// Guarded by pool.mu.
	outstanding int
	limit       int           // requests it may hold now: Concurrency, or wl's
	ahead       int           // requests it may hold beyond limit: pool.ahead, or 0 while contended or slow
	contention  float64       // the smoothed share of its runnable time it waited for a CPU; -1: unknown
	service     time.Duration // the smoothed time its answered requests held a slot; 0 before the first
	answered    bool          // an adaptive worker has answered a request since it was added
	firstArmed  bool          // the timer of its first request is set (see firstWindow)
	firstHeld   bool          // its limit is held at what it held when firstWindow passed
	wl          *limit.Worker // nil: the limit is fixed at Concurrency
	lastSat     float64       // the last saturation it reported; -1: none
	satSource   string        // where lastSat came from: "worker" or "kernel"
	routable    bool          // neither draining nor removed
	draining    bool
	removed     bool
	hung        bool      // found hung: out of rotation until removed
	quarantine  time.Time // not picked before then: its last dial was refused
	lastPick    uint64
	idle        chan struct{} // made by Drain, closed when nothing is outstanding or on Remove

	held held // the requests it holds, with Options.Poison (poison.go)
}

// rendering is how many of e's requests its limit's evidence counts: those
// within its limit. A lookahead request waits in the worker without using
// its event loop, and counted it would make a single-threaded renderer that
// is busy all the time look half idle, its limit room to grow.
// REQUIRES pool.mu held.
func (e *endpoint) rendering() int { return min(e.outstanding, e.limit) }

// warm reports whether e has been routable for at least slowStart.
func (e *endpoint) warm(now time.Time, slowStart time.Duration) bool {
	return slowStart <= 0 || now.Sub(e.added) >= slowStart
}

// slotWaiter is an admitted request that found no idle slot: a retry whose
// other workers are busy or quarantined, or one admitted in the instant a
// worker's limit fell (see the package doc).
type slotWaiter struct {
	ready   chan struct{} // closed when ep or err is set
	exclude []int         // endpoints already tried
	ep      *endpoint
	err     error
}

// While an adaptive worker's limit is in its first slow start (after
// sluice starts, or the worker does), the Controller queues through what
// arrives beyond the few slots it has yet (admission.Controller.Tolerate):
// requests wait up to rampQueueBound, as through a rolling restart, until
// rampGrace after the limit last grew. Without it a worker started into
// traffic lost most of its first requests to CoDel, which judged the
// backlog over a few slots standing (measured: a fresh sluice delivered
// 44-84/s by send time in its first 250 ms at 1x against HAProxy's
// 360-480, async Node workers; 180-284/s with it). The queue's timeout
// still bounds every wait.
const (
	rampQueueBound = 500 * time.Millisecond
	rampGrace      = time.Second
)

// firstLimit is where the first adaptive worker's limit starts (the
// others start at the mean of theirs): as TCP's initial window, a few
// requests that cost little where one at a time was right. An async
// worker's first slow start then begins two round trips further on. From
// 1, a fresh front in front of two async Node workers that saturate near
// 50 each served what arrived in its first second late or not at all:
// 0.89x what it served from 4 (with the first ramp's climb to what the
// loop's reports project, limit.Worker) at 560/s, the median of six
// rounds, and its p99 at 420/s, all of it served, was 606 ms against 360.
// A worker that renders one request at a time holds up to four only if
// they reach it within firstWindow of its first, until its loop's reports
// cut its limit (limit.Worker's first ramp): no more work queued in all,
// only queued in the worker rather than at the front.
const firstLimit = 4

// firstWindow bounds how long after its first request an adaptive worker
// that has not answered yet is given more at its first limit: once it
// passes, the worker's limit is held at what it holds until it answers,
// and what arrives waits in the Controller's queue, where CoDel sees it.
// An async worker at load is given its first few requests within a few
// milliseconds. A renderer of 150 ms was given up to four as they arrived
// over its first render, queued inside it behind it or interleaved with
// it, before any report could say it renders one at a time (Go demo
// workers, two on a core at 2x, fresh fronts, four 6 s rounds: p99 926-983
// ms, 690-743 with the hold, HAProxy's 827-837; the same goodput, 5.5-5.8
// requests/s, and the same for quiet async Node workers at 300 and
// 560/s). Its first answer gives the limit back to its first ramp, whose
// rules then judge the worker by its report.
const firstWindow = 20 * time.Millisecond

// A worker's lookahead (Options.Lookahead) fills the gap in which its CPU
// would idle between a response and the next request. A worker whose CPU
// is shared with another busy process (two renderers pinned to one core,
// a front on the same cores) has no such gap: the other process runs in
// it. There a lookahead request only waits behind a render, bound to a
// worker another may free before (measured on two CPU-bound Node workers
// sharing a core: without it their p99 was a quarter lower, 98 ms against
// 128 at the median of ten rounds, for the same throughput; one on a core
// of its own served 1.04-1.06x with it). So a worker whose kernel meter
// (Options.WorkerDemand) says its main thread waited for a CPU
// contendedOff of the time it was runnable or more, smoothed over
// windows, has no lookahead until that falls under contendedOn. One
// alone on its core waited 0.04-0.08; one of two on a core, 0.52.
const (
	contendedOff     = 0.25
	contendedOn      = 0.15
	contentionWeight = 0.25 // of a new reading in the smoothed share
)

// The gap a lookahead fills is a round trip through the front, 0.2 to
// 3 ms: worth 2 to 20% of a 15 ms render, under 3% of a 100 ms one. Its
// cost grows the other way: the request ahead waits a whole render in the
// worker, where no queue bound sees it (CoDel judges the front's queue),
// and a client of a second gets its answer a render later (two renderers
// of 150 ms sharing a core: a served request waited up to 300 ms more
// than the front's bound). So a worker whose answered requests held their
// slot slowAheadOff or longer, smoothed, has no lookahead until that falls
// under slowAheadOn.
const (
	slowAheadOff  = 100 * time.Millisecond
	slowAheadOn   = 60 * time.Millisecond
	serviceWeight = 0.25 // of a new request's time in the smoothed one
)

// pool is the set of endpoints and their slots. An endpoint has its limit's
// slots and its ahead more, taken only when every endpoint is at its limit
// (Options.Lookahead). The Controller's limit is kept at slots + aheads +
// retired, so that an admitted request finds an idle slot.
//
// Lock order: pool.mu, then the Controller's (setLimit and tolerate are
// called with mu held, so that limits are applied in the order they were
// computed). The Controller never calls back into the pool.
type pool struct {
	slowStart time.Duration
	ahead     int // slots each endpoint has beyond its limit, while not contended
	wlOpts    WorkerLimit
	setLimit  func(int)
	tolerate  func(until time.Time, bound time.Duration) // the Controller's Tolerate
	// the Controller's EndTolerance, and the end of the last tolerance
	// the ramps asked for
	endTolerance func(until time.Time)
	rampUntil    time.Time
	slotWaits    atomic.Uint64

	mu      sync.Mutex
	eps     []*endpoint // routable and draining, in the order added
	byID    map[int]*endpoint
	slots   int // sum of the limits of routable endpoints
	aheads  int // sum of the ahead slots of routable endpoints
	retired int // requests outstanding on draining or removed endpoints
	applied int // the limit last given to setLimit
	seq     uint64
	waiters []*slotWaiter // FIFO
}

func (p *pool) init(slowStart time.Duration, ahead int, wl WorkerLimit, setLimit func(int), tolerate func(time.Time, time.Duration), endTolerance func(time.Time)) {
	p.slowStart = slowStart
	p.ahead = ahead
	p.wlOpts = wl
	p.setLimit, p.tolerate, p.endTolerance = setLimit, tolerate, endTolerance
	p.byID = make(map[int]*endpoint)
	p.applied = -1
	p.mu.Lock()
	p.applyLimitLocked()
	p.mu.Unlock()
}

// applyLimitLocked gives the Controller the number of requests that may be
// in flight: the routable slots and their lookahead, plus those still
// running on endpoints that left, which hold their permits until they
// finish. REQUIRES p.mu held.
func (p *pool) applyLimitLocked() {
	if n := p.slots + p.aheads + p.retired; n != p.applied {
		p.applied = n
		p.setLimit(n)
	}
}

// better reports whether a should be picked before b: warm before cold,
// then the lower share of slots in use, then the one picked least recently
// (round robin among equals).
func (p *pool) better(a, b *endpoint, now time.Time) bool {
	if wa, wb := a.warm(now, p.slowStart), b.warm(now, p.slowStart); wa != wb {
		return wa
	}
	if la, lb := a.outstanding*b.limit, b.outstanding*a.limit; la != lb {
		return la < lb
	}
	return a.lastPick < b.lastPick
}

// pickLocked takes the best idle slot not on an endpoint in exclude, or
// returns nil. REQUIRES p.mu held.
func (p *pool) pickLocked(now time.Time, exclude []int) *endpoint {
	var best *endpoint
	for _, e := range p.eps {
		if !e.routable || e.outstanding >= e.limit+e.ahead || now.Before(e.quarantine) || slices.Contains(exclude, e.ID) {
			continue
		}
		if best == nil || p.better(e, best, now) {
			best = e
		}
	}
	if best != nil {
		best.outstanding++
		if best.wl != nil {
			best.wl.Occupy(now, best.rendering())
			if !best.answered && !best.firstArmed {
				best.firstArmed = true
				e := best
				time.AfterFunc(firstWindow, func() { p.holdFirst(e) })
			}
		}
		p.seq++
		best.lastPick = p.seq
	}
	return best
}

// holdFirst holds e's limit at what it holds, if it has not answered
// since its first request firstWindow ago (see firstWindow).
func (p *pool) holdFirst(e *endpoint) {
	p.mu.Lock()
	defer p.mu.Unlock()
	to := max(e.outstanding, 1)
	if e.answered || !e.routable || to >= e.limit {
		return
	}
	p.slots -= e.limit - to
	e.limit, e.firstHeld = to, true
	p.applyLimitLocked()
}

// take returns an endpoint with a slot taken for the caller, which must
// give it back with release. It fails with errNoWorker when no endpoint
// outside exclude is routable. When every slot is busy it waits in FIFO
// order for up to bound (forever when bound <= 0) and fails with
// errNoSlot, or ctx.Err() when ctx is done first.
func (p *pool) take(ctx context.Context, now time.Time, exclude []int, bound time.Duration) (*endpoint, error) {
	p.mu.Lock()
	if e := p.pickLocked(now, exclude); e != nil {
		p.mu.Unlock()
		return e, nil
	}
	if !p.candidateLocked(now, exclude) {
		p.mu.Unlock()
		return nil, errNoWorker
	}
	w := &slotWaiter{ready: make(chan struct{}), exclude: exclude}
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
	p.slotWaits.Add(1)

	var expired <-chan time.Time
	if bound > 0 {
		t := time.NewTimer(bound)
		defer t.Stop()
		expired = t.C
	}
	var err error
	select {
	case <-w.ready:
		return w.ep, w.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-expired:
		err = errNoSlot
	}
	p.mu.Lock()
	if w.ep != nil || w.err != nil {
		// Decided in the same instant: a slot granted to nobody is handed on.
		p.mu.Unlock()
		if w.ep != nil {
			p.release(w.ep)
		}
		return nil, err
	}
	p.waiters = slices.DeleteFunc(p.waiters, func(o *slotWaiter) bool { return o == w })
	p.mu.Unlock()
	return nil, err
}

// candidateLocked reports whether some endpoint outside exclude could take
// a request once a slot frees: routable and not quarantined. Waiting for a
// slot makes sense only then. REQUIRES p.mu held.
func (p *pool) candidateLocked(now time.Time, exclude []int) bool {
	for _, e := range p.eps {
		if e.routable && !now.Before(e.quarantine) && !slices.Contains(exclude, e.ID) {
			return true
		}
	}
	return false
}

// grantLocked hands idle slots to waiters, first come first served, each
// to an endpoint it has not tried yet. REQUIRES p.mu held.
func (p *pool) grantLocked(now time.Time) {
	for i := 0; i < len(p.waiters); {
		w := p.waiters[i]
		e := p.pickLocked(now, w.exclude)
		if e == nil {
			if len(w.exclude) == 0 {
				return // no idle slot at all
			}
			i++ // the idle slots are on endpoints w has tried
			continue
		}
		p.waiters = slices.Delete(p.waiters, i, i+1)
		w.ep = e
		close(w.ready)
	}
}

// failWaitersLocked refuses the waiters that no routable endpoint is left
// for. REQUIRES p.mu held.
func (p *pool) failWaitersLocked() {
	now := time.Now()
	p.waiters = slices.DeleteFunc(p.waiters, func(w *slotWaiter) bool {
		if p.candidateLocked(now, w.exclude) {
			return false
		}
		w.err = errNoWorker
		close(w.ready)
		return true
	})
}

// unreachable records that e refused a connection at now: a worker that
// is gone (its process died, and the supervisor has not removed it yet)
// answers every dial at once, so without this its always-free slot would
// draw every request until the Remove. It is not picked for
// DefaultQuarantine; then one request probes it again. Waiting requests
// are offered the slots again when the quarantine ends.
func (p *pool) unreachable(e *endpoint, now time.Time) {
	p.mu.Lock()
	e.quarantine = now.Add(DefaultQuarantine)
	p.mu.Unlock()
	time.AfterFunc(DefaultQuarantine, func() {
		p.mu.Lock()
		p.grantLocked(time.Now())
		p.mu.Unlock()
	})
}

// release gives back a slot taken by take, for a request the worker never
// completed (not sent, or failed).
func (p *pool) release(e *endpoint) { p.complete(e, completion{}) }

// completion is what a finished request tells its worker's limit.
type completion struct {
	done     bool          // the worker answered (false: not sent, or failed)
	rtt      time.Duration // how long it held the slot
	dropped  bool          // its client was answered 504 first
	reported bool          // the response carried HeaderSaturation
	sat      float64       // its value; NaN when it could not be read
}

// complete gives back a slot taken by take and lets the worker's limit
// learn from c.
func (p *pool) complete(e *endpoint, c completion) {
	var r demandReading
	if e.demand != nil {
		// Read outside the mutex: a reading is a file read.
		if c.reported {
			e.demand.reported()
		}
		r = e.demand.read(time.Now())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	e.outstanding--
	if r.contended {
		p.contendLocked(e, r.contention)
	}
	if c.done && e.wl != nil && !e.answered {
		e.answered = true
		if e.firstHeld {
			// Its first answer: the limit is its first ramp's again.
			e.firstHeld = false
			if e.routable {
				p.slots += e.wl.Limit() - e.limit
			}
			e.limit = e.wl.Limit()
			p.applyLimitLocked()
		}
	}
	if c.done && c.rtt > 0 {
		if e.service == 0 {
			e.service = c.rtt
		} else {
			e.service += time.Duration(serviceWeight * float64(c.rtt-e.service))
		}
		p.setAheadLocked(e)
	}
	if e.wl != nil {
		e.wl.Occupy(now, e.rendering())
		switch {
		case c.reported:
			if e.wl.Report(c.sat) {
				e.lastSat, e.satSource = c.sat, "worker"
			}
		case r.measured && e.wl.Report(r.demand):
			e.lastSat, e.satSource = r.demand, "kernel"
		}
		if c.done {
			e.wl.Complete(c.rtt, c.dropped)
		}
		if l, changed := e.wl.Decide(now); changed {
			if l > e.limit && e.wl.Ramping() {
				// Still in its first slow start: the queue built over its
				// few slots is served as the limit catches up, where CoDel
				// would shed it as standing.
				p.rampUntil = now.Add(rampGrace)
				p.tolerate(p.rampUntil, rampQueueBound)
			}
			if e.routable {
				p.slots += l - e.limit
			}
			e.limit = l
			p.applyLimitLocked()
		}
		if e.limit < firstLimit && now.Before(p.rampUntil) && p.rampsFellLocked() {
			// Every first ramp is over, each below where it started: what
			// queued meanwhile is overload now, not a climb to wait for.
			p.endTolerance(p.rampUntil)
			p.rampUntil = time.Time{}
		}
	}
	if e.routable {
		p.grantLocked(now)
		return
	}
	p.retired--
	p.applyLimitLocked()
	if e.outstanding == 0 {
		p.wakeDrainLocked(e)
	}
}

// rampsFellLocked reports whether every routable adaptive endpoint's
// first ramp is over with its limit under firstLimit: workers that serve
// fewer at once than they were first given (CPU-bound ones, cut to 1),
// for which the queue the ramps had tolerated is overload. Not when one
// ended higher: the queue built while async workers climbed is served by
// the slots they climbed to (ended as their ramps did, it was shed:
// fresh fronts before two async Node workers at about 1.2x lost a
// quarter second of their first second more often).
// REQUIRES p.mu held.
func (p *pool) rampsFellLocked() bool {
	for _, e := range p.eps {
		if e.routable && e.wl != nil && (e.wl.Ramping() || e.limit >= firstLimit) {
			return false
		}
	}
	return true
}

// contendLocked takes a reading of the share of e's runnable time it
// waited for a CPU, and gives or withdraws e's lookahead by it (see
// contendedOff). A slot it gives is granted by complete, its caller.
// REQUIRES p.mu held.
func (p *pool) contendLocked(e *endpoint, c float64) {
	if e.contention < 0 {
		e.contention = c
	} else {
		e.contention += contentionWeight * (c - e.contention)
	}
	p.setAheadLocked(e)
}

// setAheadLocked gives or withdraws e's lookahead by its contention (see
// contendedOff) and its service time (see slowAheadOff): none while either
// is past its upper bound, the pool's once both are under their lower
// ones. A slot it gives is granted by complete, its caller.
// REQUIRES p.mu held.
func (p *pool) setAheadLocked(e *endpoint) {
	ahead := e.ahead
	switch {
	case e.contention >= contendedOff || e.service >= slowAheadOff:
		ahead = 0
	case e.contention < contendedOn && e.service < slowAheadOn:
		ahead = p.ahead
	}
	if ahead == e.ahead {
		return
	}
	if e.routable {
		p.aheads += ahead - e.ahead
	}
	e.ahead = ahead
	p.applyLimitLocked()
}

func (p *pool) wakeDrainLocked(e *endpoint) {
	if e.idle != nil {
		close(e.idle)
		e.idle = nil
	}
}

// unrouteLocked takes e out of rotation: its slots leave the limit, the
// requests it still runs stay in it until they finish. REQUIRES p.mu held.
func (p *pool) unrouteLocked(e *endpoint) {
	if !e.routable {
		return
	}
	e.routable = false
	p.slots -= e.limit
	p.aheads -= e.ahead
	p.retired += e.outstanding
	p.applyLimitLocked()
	p.failWaitersLocked()
}

// hang takes e, found hung, out of rotation for good: no new request goes
// to it, and the slot of the hung request, once released, is not given
// again. It reports false when e was already found hung.
func (p *pool) hang(e *endpoint) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e.hung {
		return false
	}
	e.hung = true
	p.unrouteLocked(e)
	return true
}

// add makes e routable. It reports false when e.ID is already known.
func (p *pool) add(e *endpoint) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.byID[e.ID]; ok {
		return false
	}
	e.routable = true
	e.limit, e.lastSat = e.Concurrency, -1
	e.ahead, e.contention, e.service = p.ahead, -1, 0
	e.answered, e.firstArmed, e.firstHeld = false, false, false
	if e.Adaptive {
		e.limit = p.startLimitLocked(e.Concurrency)
		wl, err := limit.NewWorker(e.added, limit.WorkerOptions{Initial: e.limit, Max: e.Concurrency,
			MaxSaturation: p.wlOpts.MaxSaturation, Window: p.wlOpts.Window})
		if err != nil {
			panic(err) // Options.Validate refused what NewWorker refuses
		}
		e.wl = wl
	}
	p.eps = append(p.eps, e)
	p.byID[e.ID] = e
	p.slots += e.limit
	p.aheads += e.ahead
	p.applyLimitLocked()
	p.grantLocked(e.added)
	return true
}

// startLimitLocked is an adaptive worker's first limit: the mean of the
// other adaptive workers' limits, so that a worker restarted in a rolling
// deploy takes its predecessor's share at once; firstLimit for the first
// worker. REQUIRES p.mu held.
func (p *pool) startLimitLocked(maxLimit int) int {
	sum, n := 0, 0
	for _, o := range p.eps {
		if o.routable && o.wl != nil {
			sum += o.limit
			n++
		}
	}
	if n == 0 {
		return min(firstLimit, maxLimit)
	}
	return min(max((sum+n/2)/n, 1), maxLimit)
}

// drain stops new requests to id and waits until none is outstanding on
// it, ctx is done, or it is removed.
func (p *pool) drain(ctx context.Context, id int) error {
	p.mu.Lock()
	e := p.byID[id]
	if e == nil {
		p.mu.Unlock()
		return nil
	}
	e.draining = true
	p.unrouteLocked(e)
	if e.outstanding == 0 {
		p.mu.Unlock()
		return nil
	}
	if e.idle == nil {
		e.idle = make(chan struct{})
	}
	idle := e.idle
	p.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// remove forgets id and returns its endpoint, nil when unknown.
func (p *pool) remove(id int) *endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.byID[id]
	if e == nil {
		return nil
	}
	delete(p.byID, id)
	p.eps = slices.DeleteFunc(p.eps, func(o *endpoint) bool { return o == e })
	p.unrouteLocked(e)
	e.removed = true
	p.wakeDrainLocked(e)
	return e
}

func (p *pool) ready() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.slots > 0
}

func (p *pool) endpoints() []*endpoint {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.eps)
}
