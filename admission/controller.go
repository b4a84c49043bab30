package admission

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// The admission state is one atomic word, so that the fast path admits with
// a single atomic add that is checked against the limit in force at that
// instant, and undone when it does not fit: a burst of goroutines can never
// overshoot the limit, as a check-then-act admission (read in flight, then
// add) does when several goroutines read the same last free slot.
//
//	bits  0..23  in flight (slots in use)
//	bits 24..47  limit
//	bit  48      slow: someone is waiting or the controller is closed; every
//	             acquire and release then takes the mutex, so a newcomer never
//	             overtakes a waiter and a freed slot is handed to the queue.
//	bits 49..63  sequence: every fast acquire adds one, wrapping, so that the
//	             add that takes the slots also numbers the request for
//	             sampling (see sampled) at no extra cost.
const (
	fieldBits = 24
	fieldMask = 1<<fieldBits - 1
	slowBit   = 1 << 48
	seqShift  = 49
	seqOne    = 1 << seqShift

	// MaxLimit is the largest limit a Controller can enforce.
	MaxLimit = fieldMask >> 1

	// MaxCost is the largest Request.Cost; a dearer request counts as
	// MaxCost. Bounding it keeps the in-flight field from overflowing into
	// the limit however many optimistic adds are in flight at once.
	MaxCost = 1 << 16

	// fastMaxCost is the dearest request the fast path's optimistic add
	// takes; dearer ones use a compare-and-swap (see Acquire).
	fastMaxCost = 64
)

func inflightOf(s uint64) int64 { return int64(s & fieldMask) }
func limitOf(s uint64) int64    { return int64(s >> fieldBits & fieldMask) }

// fitsAfter reports whether cost slots, already added to s, fit: the
// in-flight count they make is within the limit, or they are alone (as in
// fits).
func fitsAfter(s uint64, cost int64) bool {
	in, lim := inflightOf(s), limitOf(s)
	return in <= lim || in == cost
}

// fits reports whether cost more slots may be taken in state s. A request
// dearer than the whole limit is admitted only when nothing else runs, so it
// is slow but never starved.
func fits(s uint64, cost int64) bool {
	in, lim := inflightOf(s), limitOf(s)
	return in+cost <= lim || (in == 0 && cost > lim)
}

// Controller admits requests under a concurrency limit, queues the excess
// in a bounded queue with direct hand-off, and sheds what cannot be served.
//
// Acquire and Permit.Release are safe for concurrent use. While fewer than
// limit slots are in use and nobody waits, they take no lock and allocate
// nothing. Create one with New and stop it with Close: it owns one
// goroutine (the sample-window loop). A process may run several.
type Controller struct {
	state atomic.Uint64
	_     [56]byte
	// ceiling bounds the limit from outside the algorithm: the effective
	// limit is min(algorithm, ceiling). See SetCeiling.
	ceiling atomic.Int64
	// epoch is when the Controller was made. Permits are timed from it
	// with time.Since, which reads only the monotonic clock: half the cost
	// of time.Now, which reads the wall clock too (on a VM's kvm-clock,
	// 35 ns against 190 ns measured).
	epoch time.Time
	// fastAdmitted counts the fast path's admissions per priority class,
	// striped: one shared counter would be a second cache line every core
	// fights for. Per class, so that the queue-wait histograms count these
	// zero waits without recording anything on the fast path.
	fastAdmitted [numPriorities]stripedCounter
	admitted     atomic.Uint64 // admissions after the slow path

	// shift is log2 of how many requests the Controller times one of (see
	// sampled), read by every timed Acquire; the window loop sets it, when
	// it changes. Not on the state word's line: in parallel that line
	// moves between the cores, and a second access to it after the add
	// would often find it gone.
	shift atomic.Uint32

	alg           limit.Algorithm
	quota         Quota // nil: none
	signal        limit.Signal
	maxSaturation float64
	queueTimeout  time.Duration
	smoothing     float64
	window        time.Duration
	log           *slog.Logger
	maxShift      uint32 // the highest sampling shift (see pace)

	// The other counters, off the fast path's line.
	_         [64]byte
	latency   atomic.Uint64 // float64 bits of the EWMA, in nanoseconds
	peak      atomic.Int64  // highest in-flight seen by Done this window
	timed     atomic.Uint64 // timed Permits given back, by weight (see pace)
	afterWait atomic.Uint64
	cancelled atomic.Uint64
	shedCount [numReasons]atomic.Uint64

	// classLatency is the smoothed service time per priority class (float64
	// bits, ns): the expected service time that deadlines are judged by.
	classLatency [numPriorities]atomic.Uint64

	// lat are the queue-wait and service-time histograms (see Histograms).
	lat latencies

	// Lock order: mu, then nothing. The limit algorithm is never called
	// with mu held.
	mu     sync.Mutex
	q      *fairQueue // nil: no queue
	codel  *codel     // nil: disabled
	lifo   bool
	closed bool
	// queueSize is q's size, Options.QueueSize: 0 sizes it to the service
	// (see autoQueueSize).
	queueSize int
	// Until tolerateUntil, CoDel judges no sojourn under tolerateBound
	// standing, and for tolerateFade after it none under the bound as it
	// fades (see Tolerate).
	tolerateUntil time.Time
	tolerateBound time.Duration

	stop chan struct{}
	wg   sync.WaitGroup
}

// New returns a Controller and starts its sample-window loop. Call Close
// when done with it.
func New(o Options) (*Controller, error) { return newController(o, maxSampleShift) }

// newController is New with the sampling shift bounded by maxShift: 0
// times every request.
func newController(o Options, maxShift uint32) (*Controller, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	c := &Controller{
		epoch:         time.Now(),
		alg:           o.Limit,
		quota:         o.Quota,
		signal:        o.Signal,
		maxSaturation: o.MaxSaturation,
		queueTimeout:  o.QueueTimeout,
		smoothing:     o.SmoothingFactor,
		window:        o.SampleWindow,
		log:           o.Logger,
		lifo:          o.AdaptiveLIFO,
		maxShift:      maxShift,
		stop:          make(chan struct{}),
	}
	if o.QueueSize >= 0 {
		c.queueSize = o.QueueSize
		size := o.QueueSize
		if size == 0 {
			size = autoQueueMin
		}
		c.q = newFairQueue(size, o.MaxQueuedPerTenant, o.MinShare, o.TenantWeight)
		if o.MaxTrackedTenants > 0 {
			c.q.known.init(o.MaxTrackedTenants)
		}
	}
	if o.CoDelTarget > 0 {
		c.codel = &codel{target: o.CoDelTarget, interval: o.CoDelInterval}
	}
	c.ceiling.Store(MaxLimit)
	c.state.Store(uint64(clampLimit(c.alg.Limit())) << fieldBits)
	if c.window > 0 {
		c.wg.Add(1)
		go c.loop()
	}
	return c, nil
}

func clampLimit(n int) int64 {
	if n < 1 {
		return 1
	}
	if n > MaxLimit {
		return MaxLimit
	}
	return int64(n)
}

// Permit is a granted slot. Give it back exactly once, with Done,
// DoneSample or Release; the zero Permit's methods do nothing. Giving back
// more than the Controller holds in all panics ("released more than held"),
// as x/sync/semaphore does; a Permit given back twice while others are held
// cannot be told from theirs, and corrupts the count like any double free.
type Permit struct {
	c     *Controller
	cost  int64
	tag   permitTag
	start time.Duration // when it was granted, since c.epoch; untimed if not read
}

// permitTag is a Permit's class and sampling shift, one field: the
// compiler keeps a struct of up to four fields in registers, and a
// Permit spilled to the stack between Acquire and Release cost the fast
// path a third of its time.
type permitTag struct {
	class int8
	shift uint8 // a timed Permit stands for 1<<shift requests
}

// untimed is the start of a Permit that is not timed: its Request was
// Untimed, or it was not sampled. c.since() is never negative.
const untimed time.Duration = -1

// times reports whether the Permit for req, granted as the request
// numbered seq, is timed, and at what shift (see sampled).
func (c *Controller) times(req *Request, seq uint64) (uint32, bool) {
	if req.Untimed {
		return 0, false
	}
	shift := c.shift.Load()
	return shift, sampled(seq, shift)
}

// timedPermit is a Permit for cost slots of class ci granted now, timed at
// shift: one clock read. Kept out of line, so that the fast path's
// untimed case stays short.
//
//go:noinline
func (c *Controller) timedPermit(cost int64, ci int, shift uint32) Permit {
	return Permit{c: c, cost: cost, tag: permitTag{int8(ci), uint8(shift)}, start: c.since()}
}

// Release gives the slot back without a latency sample: for work that
// did not run (the client left) or whose duration says nothing about the
// service.
func (p Permit) Release() {
	if p.c != nil {
		p.c.giveBack(p.cost, p.start, p.tag.shift)
	}
}

// giveBack is Release: kept out of Permit's method, so that Release
// inlines and the Permit stays in registers.
//
//go:noinline
func (c *Controller) giveBack(cost int64, start time.Duration, shift uint8) {
	if start != untimed {
		c.countTimed(shift)
	}
	c.release(cost)
}

// countTimed counts a timed Permit given back, at shift (see pace).
func (c *Controller) countTimed(shift uint8) { c.timed.Add(1 << shift) }

// Done gives the slot back and, if the Permit was timed, feeds the limit
// algorithm the time since it was granted. A Permit of an Untimed Request
// is not timed, and neither are most of them at high rates (see
// Options.SampleWindow): for those Done is Release.
func (p Permit) Done() {
	if p.c != nil {
		p.c.done(p.cost, p.tag, p.start)
	}
}

// done is Done: kept out of Permit's method, as giveBack is.
//
//go:noinline
func (c *Controller) done(cost int64, tag permitTag, start time.Duration) {
	if start == untimed {
		c.release(cost)
		return
	}
	now := c.since()
	Permit{c, cost, tag, start}.DoneSample(limit.Sample{Now: c.epoch.Add(now), RTT: now - start, Weight: 1 << tag.shift})
}

// DoneSample gives the slot back and feeds the limit algorithm s, for
// callers that time their own work: s.Now and s.RTT (the time the slot was
// held) are the caller's, s.Dropped says the work failed for overload;
// Inflight is filled in here, and Weight is 1 when not set: a caller that
// times its own work gives back a sample for every request.
func (p Permit) DoneSample(s limit.Sample) {
	c := p.c
	if c == nil {
		return
	}
	if s.Weight <= 0 {
		s.Weight = 1
	}
	s.Inflight = int(inflightOf(c.state.Load()))
	c.release(p.cost)
	for {
		peak := c.peak.Load()
		if int64(s.Inflight) <= peak || c.peak.CompareAndSwap(peak, int64(s.Inflight)) {
			break
		}
	}
	if p.start != untimed {
		c.countTimed(p.tag.shift)
	}
	c.smooth(&c.latency, s.RTT)
	c.smooth(&c.classLatency[p.tag.class], s.RTT)
	o := ServiceDone
	if s.Dropped {
		o = ServiceDropped
	}
	c.lat.service[p.tag.class][o].record(s.RTT, uint64(s.Weight))
	c.adopt(c.alg.Observe(s))
}

// smooth folds rtt into the EWMA stored as float64 bits in v.
func (c *Controller) smooth(v *atomic.Uint64, rtt time.Duration) {
	for {
		old := v.Load()
		prev := math.Float64frombits(old)
		next := float64(rtt)
		if prev != 0 {
			next = prev + c.smoothing*(float64(rtt)-prev)
		}
		if v.CompareAndSwap(old, math.Float64bits(next)) {
			return
		}
	}
}

// expected is the service time a request of class ci should expect: its
// class's smoothed latency, else the overall one, else zero.
func (c *Controller) expected(ci int) time.Duration {
	if v := c.classLatency[ci].Load(); v != 0 {
		return time.Duration(math.Float64frombits(v))
	}
	return time.Duration(math.Float64frombits(c.latency.Load()))
}

// since is the time since c.epoch: one read of the monotonic clock.
func (c *Controller) since() time.Duration { return time.Since(c.epoch) }

// Acquire asks for a slot for req. It returns at once when one is free and
// nobody waits; otherwise it queues req and blocks until a slot is handed
// to it, the queue timeout or req's deadline passes, ctx is done, or the
// controller closes.
//
// On success the caller must give the Permit back. On failure it returns
// either a *ShedError (use ShedReason) and counts it, or ctx.Err() when the
// caller gave up while queued: such a request is dropped silently, and a
// slot granted to it at the same instant is handed on, not leaked.
func (c *Controller) Acquire(ctx context.Context, req Request) (Permit, error) {
	if c.quota != nil {
		if ok, retry := c.quota.Take(req); !ok {
			return Permit{}, c.shedQuota(retry)
		}
	}
	cost := req.cost()
	ci := req.Priority.classIndex()
	// One atomic add takes the slots optimistically (a load and a
	// compare-and-swap would cost two cache-line transfers on a contended
	// word, and retries). If they did not fit, or someone waits, the add is
	// undone as a release, which hands the slots on if a waiter could use
	// them: no work is ever admitted over the limit, and a newcomer never
	// overtakes a waiter. Dear requests take the compare-and-swap instead,
	// so that optimistic adds can never sum past the in-flight field.
	if cost <= fastMaxCost {
		if s := c.state.Add(uint64(cost) + seqOne); s&slowBit == 0 && fitsAfter(s, cost) {
			c.fastAdmitted[ci].add()
			c.seenFast(req.Tenant)
			if shift, ok := c.times(&req, s>>seqShift); ok {
				return c.timedPermit(cost, ci, shift), nil
			}
			return Permit{c: c, cost: cost, tag: permitTag{class: int8(ci)}, start: untimed}, nil
		}
		c.release(cost)
	} else if s, ok := c.tryAdmitFast(cost); ok {
		c.fastAdmitted[ci].add()
		c.seenFast(req.Tenant)
		if shift, ok := c.times(&req, s>>seqShift); ok {
			return c.timedPermit(cost, ci, shift), nil
		}
		return Permit{c: c, cost: cost, tag: permitTag{class: int8(ci)}, start: untimed}, nil
	}
	p, wait, err := c.acquireSlow(ctx, req, cost)
	c.lat.wait[ci][waitOutcome(err)].record(wait, 1)
	return p, err
}

// seenFast tells the queue that tenant was served without queueing, so
// that it is no newcomer when a queue forms (see fairQueue).
func (c *Controller) seenFast(tenant string) {
	if tenant != "" && c.q != nil {
		c.q.fast.add(tenant)
	}
}

// tryAdmitFast takes cost slots with a compare-and-swap, numbering the
// request as the fast path's add does, if they fit and nobody waits. It
// returns the state it made.
func (c *Controller) tryAdmitFast(cost int64) (uint64, bool) {
	for {
		s := c.state.Load()
		if s&slowBit != 0 || !fits(s, cost) {
			return 0, false
		}
		if next := s + uint64(cost) + seqOne; c.state.CompareAndSwap(s, next) {
			return next, true
		}
	}
}

// acquireSlow is Acquire past the fast path: it also returns how long the
// request waited in the queue (zero when it did not queue). Under the
// mutex, in order: a closed controller refuses; a free slot nobody waits
// for is taken; a request that may not wait is shed; one that may is
// queued. It then waits without the mutex.
func (c *Controller) acquireSlow(ctx context.Context, req Request, cost int64) (Permit, time.Duration, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return Permit{}, 0, c.shed(ReasonShutdown)
	}
	if c.admitNowLocked(req.Tenant, cost) {
		c.mu.Unlock()
		ci := req.Priority.classIndex()
		if shift, ok := c.times(&req, c.admitted.Add(1)); ok {
			return c.timedPermit(cost, ci, shift), 0, nil
		}
		return Permit{c: c, cost: cost, tag: permitTag{class: int8(ci)}, start: untimed}, 0, nil
	}
	if err := c.mayWaitLocked(ctx); err != nil {
		c.mu.Unlock()
		return Permit{}, 0, err
	}
	now := time.Now()
	wait, waitReason, err := c.waitBound(req, now)
	var w *waiter
	if err == nil {
		w, err = c.enqueueLocked(req, cost, now)
	}
	c.mu.Unlock()
	if err != nil {
		return Permit{}, 0, err
	}
	p, err := c.await(ctx, w, wait, waitReason)
	// One clock read: the end of the wait is the start of the Permit.
	end := c.since()
	if err == nil {
		n := c.admitted.Add(1)
		c.afterWait.Add(1)
		if shift, ok := c.times(&req, n); ok {
			p.start, p.tag.shift = end, uint8(shift)
		}
	}
	return p, end - now.Sub(c.epoch), err
}

// admitNowLocked takes cost slots for tenant if they fit and nobody
// waits: a newcomer never overtakes a waiter. REQUIRES c.mu held.
func (c *Controller) admitNowLocked(tenant string, cost int64) bool {
	if c.q != nil && c.q.len() > 0 || !c.tryAdmitLocked(cost) {
		return false
	}
	if c.q != nil {
		c.q.known.add(tenant)
	}
	return true
}

// mayWaitLocked returns why a request that found no free slot may not
// wait for one, or nil: there is no queue (ReasonLimit); the process is
// saturated and, with CoDel, its queue standing (ReasonSaturated:
// queueing behind it only adds latency); or its caller has given up
// already (ctx.Err(), not counted as a shed).
//
// With CoDel, saturation refuses waiting only while CoDel judges the
// queue standing. At about capacity a CPU-bound process is saturated
// nearly all the time while its arrivals still come in bursts and lulls:
// refusing every request that found the slots full there shed 5-17% of
// a load at about capacity (the library face, internal/eval/gap/lib-ab.sh;
// plain net/http served all of it), which a queue within CoDel's calm
// sojourn serves. Under an overload the queue stands at CoDel's floor, and
// saturation then sheds at once what would wait to be shed by CoDel.
// REQUIRES c.mu held.
func (c *Controller) mayWaitLocked(ctx context.Context) error {
	if c.q == nil {
		return c.shed(ReasonLimit)
	}
	if c.saturated() && (c.codel == nil || c.codel.standing()) {
		return c.shed(ReasonSaturated)
	}
	return ctx.Err()
}

// waitBound is how long req may wait for a slot from now, and the reason
// it is shed with when that time passes: the queue timeout, or less when
// req's deadline would pass before the work could finish
// (ReasonDeadline). When that is already so, it sheds req at once.
func (c *Controller) waitBound(req Request, now time.Time) (time.Duration, Reason, error) {
	wait, reason := c.queueTimeout, ReasonQueueTimeout
	if req.Deadline.IsZero() {
		return wait, reason, nil
	}
	left := req.Deadline.Sub(now) - c.expected(req.Priority.classIndex())
	if left <= 0 {
		return 0, ReasonNone, c.shed(ReasonDeadline)
	}
	if wait <= 0 || left < wait {
		wait, reason = left, ReasonDeadline
	}
	return wait, reason, nil
}

// enqueueLocked queues req, or sheds it when the queue refuses it (full
// of requests at least as important, or its tenant over its cap). A
// request the queue displaces to make room is shed. REQUIRES c.mu held.
func (c *Controller) enqueueLocked(req Request, cost int64, now time.Time) (*waiter, error) {
	w := &waiter{req: req, cost: cost, enqueued: now, ready: make(chan struct{})}
	if c.queueSize == 0 {
		c.q.setMax(c.autoQueueSizeLocked(now))
	}
	victim, why, refused := c.q.push(w)
	if refused != ReasonNone {
		return nil, c.shed(refused)
	}
	if victim != nil {
		c.decideLocked(victim, c.shed(why))
	}
	c.setSlowLocked()
	// A release may have landed between the failed admission and the slow
	// bit: offer the freed slot now, or nobody would.
	c.dispatchLocked()
	return w, nil
}

// await blocks until queued w is granted or shed, ctx is done, or wait (if
// positive) passes, when w is shed with waitReason.
func (c *Controller) await(ctx context.Context, w *waiter, wait time.Duration, waitReason Reason) (Permit, error) {
	var timeout <-chan time.Time
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-w.ready:
		return c.outcome(w)
	case <-ctx.Done():
		c.mu.Lock()
		if w.done {
			// Granted (or shed) in the same instant: honour a shed, but a
			// grant nobody will use is handed on.
			c.mu.Unlock()
			if w.err == nil {
				c.release(w.cost)
			}
			return Permit{}, ctx.Err()
		}
		c.finishLocked(w, ctx.Err())
		c.mu.Unlock()
		c.cancelled.Add(1)
		return Permit{}, ctx.Err()
	case <-timeout:
		c.mu.Lock()
		if !w.done {
			c.finishLocked(w, c.shed(waitReason))
		}
		c.mu.Unlock()
		return c.outcome(w)
	}
}

// outcome turns a decided waiter into Acquire's result.
func (c *Controller) outcome(w *waiter) (Permit, error) {
	if w.err != nil {
		return Permit{}, w.err
	}
	// acquireSlow counts it as admitted, and times it.
	return Permit{c: c, cost: w.cost, tag: permitTag{class: w.class}, start: untimed}, nil
}

// tryAdmitLocked takes cost slots if they fit. REQUIRES c.mu held.
func (c *Controller) tryAdmitLocked(cost int64) bool { return c.tryAdmit(cost, 0) }

// tryAdmit takes cost slots with a compare-and-swap if they fit, and
// none of the bits in refuse is set.
func (c *Controller) tryAdmit(cost int64, refuse uint64) bool {
	for {
		s := c.state.Load()
		if s&refuse != 0 || !fits(s, cost) {
			return false
		}
		if c.state.CompareAndSwap(s, s+uint64(cost)) {
			return true
		}
	}
}

// finishLocked takes w out of the queue and decides its fate: err nil
// grants it (its slots are already counted), anything else refuses it.
// REQUIRES c.mu held; w is queued.
func (c *Controller) finishLocked(w *waiter, err error) {
	if err == nil {
		c.q.dispatched(w)
	} else {
		c.q.remove(w)
	}
	c.decideLocked(w, err)
}

// decideLocked publishes w's fate; w has left the queue. Every waiter
// passes here exactly once. REQUIRES c.mu held.
func (c *Controller) decideLocked(w *waiter, err error) {
	w.err = err
	w.done = true
	close(w.ready)
	if c.q.len() == 0 {
		if c.codel != nil {
			c.codel.empty()
		}
		if !c.closed {
			c.state.And(^uint64(slowBit))
		}
	}
}

func (c *Controller) setSlowLocked() { c.state.Or(slowBit) }

// dispatchLocked hands free slots to waiters in the queue's order until the
// next one does not fit. On the way it applies the sojourn and deadline
// policies: CoDel may shed (the lowest class's heaviest tenant first), and a
// request that can no longer finish before its deadline is shed rather than
// served. REQUIRES c.mu held.
func (c *Controller) dispatchLocked() {
	if c.q == nil {
		return
	}
	var now time.Time
	for {
		w := c.q.front()
		if w == nil || !fits(c.state.Load(), w.cost) {
			return
		}
		if now.IsZero() {
			now = time.Now()
		}
		if c.codel != nil {
			// CoDel judges the request it would shed: the oldest of the
			// heaviest tenant in the lowest class. Judging the one about
			// to be served instead would let a noisy tenant's backlog
			// age unseen behind the other tenants' fresh requests, the
			// fair order putting them first.
			victim := c.q.dropCandidate()
			service := c.service()
			if c.codel.due(now) {
				queued := c.q.len()
				c.codel.roll(now, c.arrivals()+uint64(queued), c.admitted.Load()+c.fastAdmittedTotal(), c.overloadSheds(), queued, inflightOf(c.state.Load()))
			}
			floor := c.codel.judged(codelFloor(service, limitOf(c.state.Load()), c.codel.depth()))
			if d := now.Sub(c.tolerateUntil); d < 0 {
				floor = max(floor, c.tolerateBound)
			} else if d < tolerateFade {
				floor = max(floor, c.tolerateBound*(tolerateFade-d)/tolerateFade)
			}
			if c.codel.shouldDrop(now, now.Sub(victim.enqueued), floor, c.q.len()) {
				c.finishLocked(victim, c.shed(c.q.dropReason(victim)))
				continue
			}
			c.q.lifo = c.lifo && c.codel.standing() && c.codel.overloaded
		}
		if !w.req.Deadline.IsZero() && now.Add(c.expected(int(w.class))).After(w.req.Deadline) {
			c.finishLocked(w, c.shed(ReasonDeadline))
			continue
		}
		if !c.tryAdmitLocked(w.cost) {
			// A newcomer's optimistic add holds the slots for an
			// instant; its undo sees the slow bit and dispatches again.
			return
		}
		c.finishLocked(w, nil)
	}
}

// service returns the smoothed service time of completed requests; 0
// before the first.
func (c *Controller) service() time.Duration {
	return time.Duration(math.Float64frombits(c.latency.Load()))
}

// The bounds of an auto-sized queue (Options.QueueSize zero).
const (
	autoQueueMin = 100
	autoQueueMax = 4096
	// autoQueueSpan is the service an auto-sized queue holds: twice the
	// sojourn a queue may stand to at or below capacity, so that the
	// count never binds before the sojourn rules.
	autoQueueSpan = 2 * calmSojourn
)

// tolerateFade is how long a tolerance's bound takes to fade to CoDel's
// own once it ends (see Tolerate).
const tolerateFade = time.Second

// autoQueueSizeLocked is the size of the Controller's auto-sized queue at
// now: autoQueueSize, or autoQueueMax while a tolerance is in force, when
// the wait is bounded by time alone (a dip or a ramp leaves the limit far
// below what the queue will be served by). REQUIRES c.mu held.
func (c *Controller) autoQueueSizeLocked(now time.Time) int {
	if c.codel != nil && now.Before(c.tolerateUntil) {
		return autoQueueMax
	}
	return autoQueueSize(c.service(), limitOf(c.state.Load()))
}

// autoQueueSize returns the size of an auto-sized queue: what slots serve
// in autoQueueSpan at service time a request (Little's law), within
// autoQueueMin and autoQueueMax; autoQueueMin before a service time is
// known.
func autoQueueSize(service time.Duration, slots int64) int {
	if service <= 0 {
		return autoQueueMin
	}
	n := float64(slots) * float64(autoQueueSpan) / float64(service)
	return int(min(max(n, autoQueueMin), autoQueueMax))
}

// Tolerate makes CoDel, until the time given, judge no queue standing
// whose requests have waited less than bound: a planned drop in capacity
// that passes by itself (a rolling restart, during which each worker's
// successor starts cold beside it and takes CPU from it; a worker's limit
// still doubling from 1 after a start) is queued through rather than shed.
// The queue's size and timeout still bound the wait. Without CoDel it does
// nothing.
//
// When it ends, the bound fades to CoDel's own over tolerateFade (a
// second): what the tolerance let queue is shed as its requests pass the
// fading bound, not at once. Above capacity such a queue cannot drain,
// and shed at once it was a hole of half a second in what a fresh front
// served (its workers' limits having climbed under a ramp's tolerance);
// fading, fresh fronts in front of two async Node workers at about 1.1x
// served 1.02-1.05x at the median of 16 rounds, ahead in 11. A zero until
// ends it without a fade.
//
// A call while an earlier tolerance is in force extends it: the later end
// and the longer bound hold, so that tolerances from two sources (a roll,
// and the ramp of the worker it started) do not cut each other short. A
// zero until ends every tolerance at once.
func (c *Controller) Tolerate(until time.Time, bound time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until.IsZero() || !time.Now().Before(c.tolerateUntil) {
		c.tolerateUntil, c.tolerateBound = until, bound
		return
	}
	if until.After(c.tolerateUntil) {
		c.tolerateUntil = until
	}
	c.tolerateBound = max(c.tolerateBound, bound)
}

// EndTolerance ends, from now, the tolerance in force if it would end by
// until: the one its caller set to until, not one another source has
// extended past it since (a rolling restart's). Its bound fades from now,
// as when it ends by itself. A proxy whose workers' first ramps are over
// before their grace ends so: the queue tolerated for their climb is
// overload once they are cut (two CPU-bound Hypernova workers at 2x, cut
// to 1 a quarter second into a fresh front's load, left a queue standing
// to the tolerance's half second for another second, then shed whole).
func (c *Controller) EndTolerance(until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Before(c.tolerateUntil) && !c.tolerateUntil.After(until) {
		c.tolerateUntil = now
	}
}

// ReplaceTolerance puts a tolerance until the time given, with bound, in
// place of any in force, in one step: a rolling restart's end shortens its
// own tolerance to its grace so. (Tolerate with a zero until, then the new
// one, left an instant with none, which a dispatch or a Stats call could
// see.) A zero until ends every tolerance at once, as Tolerate's.
func (c *Controller) ReplaceTolerance(until time.Time, bound time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tolerateUntil, c.tolerateBound = until, bound
}

// release gives cost slots back: lock-free while nobody waits, otherwise
// the slots go straight to the queue's next waiter.
//
// One atomic add, not a load and a compare-and-swap: on a contended word
// each is a cache-line transfer between cores. The subtraction lands
// before the mutex is taken, which is safe: a waiter sets the slow bit
// under the mutex and then dispatches, so either this add saw the bit and
// dispatches below, or that dispatch sees the freed slot.
func (c *Controller) release(cost int64) {
	s := c.state.Add(^uint64(cost - 1)) // subtract cost
	if inflightOf(s) > MaxLimit+MaxCost {
		// The in-flight field went below zero (and borrowed from the
		// limit): more was given back than held. Undo, and fail loudly
		// rather than run with a corrupt limit.
		c.state.Add(uint64(cost))
		panic("admission: released more than held")
	}
	if s&slowBit == 0 {
		return
	}
	c.mu.Lock()
	c.dispatchLocked()
	c.mu.Unlock()
}

// SetCeiling bounds the limit: the limit in force is the lower of the
// algorithm's and n (at least 1). The algorithm stays the limit's one
// owner; the ceiling is what the capacity behind the Controller allows,
// such as the worker slots a front has. A lower ceiling admits nobody
// until in flight falls below it; a higher one admits waiters at once.
// Without a call the ceiling is MaxLimit.
func (c *Controller) SetCeiling(n int) {
	c.mu.Lock()
	c.ceiling.Store(clampLimit(n))
	c.mu.Unlock()
	c.adopt(c.alg.Limit())
}

// adopt installs the algorithm's limit n, bounded by the ceiling, when it
// differs from the current one.
func (c *Controller) adopt(n int) {
	lim := min(clampLimit(n), c.ceiling.Load())
	if limitOf(c.state.Load()) == lim {
		return
	}
	c.mu.Lock()
	// Read the ceiling again under the mutex: a SetCeiling that raced this
	// call has stored it and will adopt after us.
	lim = min(clampLimit(n), c.ceiling.Load())
	for {
		s := c.state.Load()
		next := s&^(fieldMask<<fieldBits) | uint64(lim)<<fieldBits
		if c.state.CompareAndSwap(s, next) {
			break
		}
	}
	c.dispatchLocked()
	c.mu.Unlock()
}

func (c *Controller) saturated() bool {
	return c.signal != nil && c.signal.Saturation() > c.maxSaturation
}

func (c *Controller) shed(r Reason) error {
	c.shedCount[r].Add(1)
	return shed(r)
}

// Close sheds every waiter with ReasonShutdown, refuses new requests with
// it from now on, and stops the sample-window loop. Permits already granted
// stay valid. Close is idempotent.
func (c *Controller) Close() {
	c.mu.Lock()
	if !c.closed {
		c.closed = true
		c.setSlowLocked()
		for c.q != nil && c.q.len() > 0 {
			c.finishLocked(c.q.front(), c.shed(ReasonShutdown))
		}
		close(c.stop)
	}
	c.mu.Unlock()
	c.wg.Wait()
}

// arrivals is every request decided so far: admitted, shed, or given up
// by its caller while queued (not those still queued).
func (c *Controller) arrivals() uint64 {
	n := c.admitted.Load() + c.fastAdmittedTotal() + c.cancelled.Load()
	for i := range c.shedCount {
		n += c.shedCount[i].Load()
	}
	return n
}

// overloadSheds is every request shed so far because demand was above
// capacity: not for its deadline, its tenant's rate quota, or shutdown.
func (c *Controller) overloadSheds() uint64 {
	var n uint64
	for _, r := range [...]Reason{ReasonQueueFull, ReasonQueueTimeout, ReasonSaturated, ReasonCoDel, ReasonPriority, ReasonLimit, ReasonTenant} {
		n += c.shedCount[r].Load()
	}
	return n
}

func (c *Controller) fastAdmittedTotal() uint64 {
	var n uint64
	for i := range c.fastAdmitted {
		n += c.fastAdmitted[i].load()
	}
	return n
}

// Stats returns a snapshot of the controller's state and counters.
func (c *Controller) Stats() Stats {
	s := c.state.Load()
	st := Stats{
		Limit:             int(limitOf(s)),
		Inflight:          int(inflightOf(s)),
		Saturation:        -1,
		Latency:           time.Duration(math.Float64frombits(c.latency.Load())),
		Admitted:          c.admitted.Load() + c.fastAdmittedTotal(),
		AdmittedAfterWait: c.afterWait.Load(),
		Cancelled:         c.cancelled.Load(),
	}
	if c.signal != nil {
		if v := c.signal.Saturation(); !math.IsNaN(v) {
			st.Saturation = v
		}
	}
	for r := ReasonQueueFull; r < numReasons; r++ {
		st.Shed[r] = c.shedCount[r].Load()
	}
	if c.codel != nil || c.q != nil {
		c.mu.Lock()
		if c.codel != nil {
			st.TolerateUntil, st.TolerateBound = c.tolerateUntil, c.tolerateBound
		}
		if c.q != nil {
			st.Queued = int(c.q.size.Load())
			st.QueueBound = c.queueSize
			if st.QueueBound == 0 {
				st.QueueBound = c.autoQueueSizeLocked(time.Now())
			}
		}
		c.mu.Unlock()
	}
	return st
}
