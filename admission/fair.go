package admission

import (
	"math"
	"sync/atomic"
)

// fairQueue is the controller's queue discipline: whom to serve next and,
// when the queue is full, whom to shed (the package doc's second and third
// layers).
//
//   - Priority: four classes, served highest first, except that each lower
//     class that waits earns minShare of a dispatch per dispatch and is
//     served when it has earned a whole one: strict priority without
//     complete starvation.
//   - Fairness: within a class, tenants (flows) share by start-time fair
//     queuing (SFQ): a request's virtual start is max(class virtual time,
//     its flow's last finish), its finish start + cost/weight, and the
//     flow whose head starts first goes next. FIFO within a flow.
//   - A full queue drops the newest request of the heaviest flow (queued
//     cost over weight) of the lowest class: a higher class displaces a
//     lower one (ReasonPriority); within a class the tenant over its share
//     loses (ReasonTenant, a 429).
//   - Newcomers share one flow. A tenant key the queue has not served
//     recently (nor given a weight) is unproven: its requests wait in the
//     class's newcomers flow, which starts no earlier than the class's
//     virtual time (no burst credit), until one of them is served. A
//     client that sends a fresh key with every request therefore competes
//     as one tenant, not as a new one each time: it cannot jump ahead of a
//     tenant that has been waiting, and at a full queue its pooled backlog,
//     not that tenant's, is the heaviest and gets the 429s.
//
// A flow lives only while it has queued requests, so the table of flows is
// bounded by the queue size whatever keys clients send; the tenants served
// recently are remembered up to a bound of their own (tenantMemory).
type fairQueue struct {
	max       int
	perTenant int
	minShare  float64
	weight    func(tenant string) float64
	lifo      bool // serve each flow newest-first (set while a queue stands)
	known     tenantMemory
	fast      *fastSeen // written by the fast path without the lock

	classes [numPriorities]fairClass
	credit  [numPriorities]float64
	n       int
	// size mirrors n for readers that do not hold the Controller's mutex
	// (Stats, RetryAfter on the shed path).
	size atomic.Int64
}

type fairClass struct {
	flows     map[string]*flow // the known tenants' flows
	newcomers *flow            // the unproven tenants' shared flow, nil when empty
	pooledBy  map[string]int   // requests in newcomers by tenant
	heap      []*flow          // min-heap on the start tag of each flow's head
	vtime     float64
	n         int
	// recent holds the tenants of the last dispatches, a ring.
	recent [8]struct {
		tenant string
		ok     bool
	}
	next int
}

// flow is one tenant's queued requests within a class.
type flow struct {
	tenant     string // "" for a newcomers flow (see pooled)
	pooled     bool   // the class's newcomers flow
	weight     float64
	list       waitList
	cost       float64 // queued cost, for "heaviest"
	lastFinish float64
	index      int // in fairClass.heap
}

// newFairQueue returns a queue of at most max requests that remembers up
// to DefaultMaxTrackedTenants tenants (see tenantMemory.init to change it).
func newFairQueue(max, perTenant int, minShare float64, weight func(string) float64) *fairQueue {
	q := &fairQueue{max: max, perTenant: perTenant, minShare: minShare, weight: weight}
	q.known.init(DefaultMaxTrackedTenants)
	q.fast = newFastSeen()
	for i := range q.classes {
		q.classes[i].flows = make(map[string]*flow)
	}
	return q
}

func (q *fairQueue) len() int { return q.n }

// isKnown reports whether tenant waits in a flow of its own: the shared
// tenant "", a tenant with a weight, or one served recently (from the
// queue, or on the fast path).
func (q *fairQueue) isKnown(tenant string) bool {
	if tenant == "" || q.known.has(tenant) {
		return true
	}
	if q.fast.has(tenant) {
		q.known.add(tenant)
		return true
	}
	return q.weight != nil && q.weight(tenant) > 0
}

// flowOf returns the flow a request of tenant joins in cl, nil when that
// flow has nothing queued.
func (q *fairQueue) flowOf(cl *fairClass, tenant string) *flow {
	if q.isKnown(tenant) {
		return cl.flows[tenant]
	}
	return cl.newcomers
}

// setMax changes the queue's bound to n. Requests already queued past a
// lower bound stay; the next push finds the queue full until they drain.
func (q *fairQueue) setMax(n int) { q.max = n }

// push queues w. When the queue is full it makes room by taking out
// victim, to be shed with why (see victimFor); refused is the reason w
// itself is shed instead (ReasonNone: w is queued).
func (q *fairQueue) push(w *waiter) (victim *waiter, why, refused Reason) {
	ci := w.req.Priority.classIndex()
	cl := &q.classes[ci]
	fl := q.flowOf(cl, w.req.Tenant)
	if q.perTenant > 0 && fl != nil && fl.list.n >= q.perTenant {
		return nil, ReasonNone, ReasonTenant
	}
	if q.n >= q.max {
		victim, why = q.victimFor(ci, w)
		if victim == nil {
			return nil, ReasonNone, why
		}
		q.remove(victim)
		fl = q.flowOf(cl, w.req.Tenant) // the victim's removal may have dropped it
	}
	q.enqueue(cl, ci, fl, w)
	return victim, why, ReasonNone
}

// enqueue appends w to fl in class cl (index ci); fl nil means a new flow
// for w's tenant.
func (q *fairQueue) enqueue(cl *fairClass, ci int, fl *flow, w *waiter) {
	if fl == nil {
		if q.isKnown(w.req.Tenant) {
			fl = &flow{tenant: w.req.Tenant, weight: 1, index: -1}
			if q.weight != nil {
				if wt := q.weight(w.req.Tenant); wt > 0 {
					fl.weight = wt
				}
			}
			cl.flows[w.req.Tenant] = fl
		} else {
			fl = &flow{pooled: true, weight: 1, index: -1}
			cl.newcomers = fl
		}
	}
	w.class = int8(ci)
	w.flow = fl
	credit := burstCredit
	if fl.pooled {
		credit = 0 // an unproven key has no history to be within
		if cl.pooledBy == nil {
			cl.pooledBy = make(map[string]int)
		}
		cl.pooledBy[w.req.Tenant]++
	}
	w.start = math.Max(cl.vtime-credit, fl.lastFinish)
	fl.lastFinish = w.start + float64(w.cost)/fl.weight
	fl.list.pushBack(w)
	fl.cost += float64(w.cost)
	if fl.list.n == 1 {
		cl.heapPush(fl)
	}
	cl.n++
	q.n++
	q.size.Store(int64(q.n))
}

// graduate moves tenant's requests still waiting with the newcomers of
// cl into a flow of its own, in their order: the tenant has just been
// served, and its backlog is now its own. Otherwise the backlog a
// flooding tenant queued before its first request was served would stand
// in the newcomers' flow, ahead of every other newcomer.
func (q *fairQueue) graduate(cl *fairClass, ci int, tenant string) {
	if cl.pooledBy[tenant] == 0 || cl.newcomers == nil {
		return
	}
	var moved []*waiter
	for w := cl.newcomers.list.head; w != nil; w = w.next {
		if w.req.Tenant == tenant {
			moved = append(moved, w)
		}
	}
	for _, w := range moved {
		q.take(w, false)
		q.enqueue(cl, ci, cl.flows[tenant], w)
	}
	// The requests left were tagged behind the ones that moved: close the
	// gaps, or the other newcomers would pay for the tenant's backlog.
	if pool := cl.newcomers; pool != nil {
		next := math.Min(pool.list.head.start, cl.vtime)
		for w := pool.list.head; w != nil; w = w.next {
			w.start = next
			next += float64(w.cost) / pool.weight
		}
		pool.lastFinish = next
		cl.heapFix(pool)
	}
}

// victimFor chooses whom a full queue drops to make room for w: nil and
// the refusal reason when w itself is refused.
//
// With a minimum share, each class keeps a reserve of the queue that
// higher classes cannot take, and may reclaim it from any class above its
// own reserve; otherwise a share of dispatches would be guaranteed to a
// class that could never get into the queue.
func (q *fairQueue) victimFor(ci int, w *waiter) (*waiter, Reason) {
	reserve := q.reserve()
	if reserve > 0 && q.classes[ci].n < reserve {
		for j := numPriorities - 1; j >= 0; j-- {
			if j != ci && q.classes[j].n > reserve {
				return q.classes[j].heaviest(nil, 0).list.tail, ReasonPriority
			}
		}
	}
	for j := numPriorities - 1; j > ci; j-- {
		if q.classes[j].n > reserve {
			return q.classes[j].heaviest(nil, 0).list.tail, ReasonPriority
		}
	}
	cl := &q.classes[ci]
	if cl.n == 0 {
		return nil, ReasonQueueFull
	}
	own := q.flowOf(cl, w.req.Tenant)
	if heavy := cl.heaviest(own, float64(w.cost)); heavy != own {
		return heavy.list.tail, ReasonTenant
	}
	if q.othersServed(cl, own, w.req.Tenant) {
		return nil, ReasonTenant
	}
	return nil, ReasonQueueFull
}

// reserve is the part of the queue each class keeps under a minimum share.
func (q *fairQueue) reserve() int {
	if q.minShare <= 0 {
		return 0
	}
	return max(1, int(math.Ceil(q.minShare*float64(q.max))))
}

// othersServed reports whether flows other than own (tenant's, possibly
// nil) are waiting, or tenants other than tenant were served recently, in
// cl: then tenant's overflow is its own excess (429), not the server's
// overload (503).
func (q *fairQueue) othersServed(cl *fairClass, own *flow, tenant string) bool {
	if n := len(cl.heap); n > 1 || (n == 1 && cl.heap[0] != own) {
		return true
	}
	for _, t := range cl.recent {
		if t.ok && t.tenant != tenant {
			return true
		}
	}
	return false
}

// heaviest returns the flow with the most queued cost per weight, counting
// extra more for flow own (the arriving request's, possibly nil).
func (cl *fairClass) heaviest(own *flow, extra float64) *flow {
	var best *flow
	bestLoad := -1.0
	if own == nil && extra > 0 {
		best, bestLoad = nil, extra // a new flow: its load is its request
	}
	for _, fl := range cl.heap {
		load := fl.cost
		if fl == own {
			load += extra
		}
		if load /= fl.weight; load > bestLoad {
			best, bestLoad = fl, load
		}
	}
	return best
}

// top returns the highest non-empty class, or -1.
func (q *fairQueue) top() int {
	for i := range q.classes {
		if q.classes[i].n > 0 {
			return i
		}
	}
	return -1
}

// chosenClass is the class served next: the top one, unless a lower one
// has earned its guaranteed share.
func (q *fairQueue) chosenClass() int {
	t := q.top()
	if t < 0 {
		return -1
	}
	for i := t + 1; i < numPriorities; i++ {
		if q.classes[i].n > 0 && q.credit[i] >= 1 {
			return i
		}
	}
	return t
}

func (q *fairQueue) front() *waiter {
	ci := q.chosenClass()
	if ci < 0 {
		return nil
	}
	fl := q.classes[ci].heap[0]
	if q.lifo {
		return fl.list.tail
	}
	return fl.list.head
}

// dispatched records that w, returned by front, was granted: the class's
// virtual time advances and the lower classes earn their share.
func (q *fairQueue) dispatched(w *waiter) {
	t := q.top()
	for i := t + 1; i < numPriorities; i++ {
		if q.classes[i].n > 0 {
			q.credit[i] = math.Min(q.credit[i]+q.minShare, 2)
		}
	}
	if int(w.class) != t {
		q.credit[w.class]--
	}
	cl := &q.classes[w.class]
	cl.vtime = math.Max(cl.vtime, w.start)
	cl.recent[cl.next].tenant, cl.recent[cl.next].ok = w.req.Tenant, true
	cl.next = (cl.next + 1) % len(cl.recent)
	q.known.add(w.req.Tenant)
	pooled := w.flow.pooled
	q.take(w, true)
	if pooled {
		q.graduate(cl, int(w.class), w.req.Tenant)
	}
}

// remove takes w out of the queue unserved.
func (q *fairQueue) remove(w *waiter) { q.take(w, false) }

func (q *fairQueue) take(w *waiter, served bool) {
	cl := &q.classes[w.class]
	fl := w.flow
	wasHead := fl.list.head == w
	if fl.list.tail == w && !served {
		// The newest request left unserved (displaced, given up): its
		// virtual service is given back, or the flow would pay for work
		// it never got.
		fl.lastFinish = w.start
	}
	fl.list.remove(w)
	fl.cost -= float64(w.cost)
	if fl.pooled {
		if cl.pooledBy[w.req.Tenant]--; cl.pooledBy[w.req.Tenant] == 0 {
			delete(cl.pooledBy, w.req.Tenant)
		}
	}
	cl.n--
	q.n--
	q.size.Store(int64(q.n))
	switch {
	case fl.list.n == 0:
		cl.heapRemove(fl)
		if fl.pooled {
			cl.newcomers = nil
		} else {
			delete(cl.flows, fl.tenant)
		}
		if cl.n == 0 {
			q.credit[w.class] = 0
		}
	case wasHead:
		cl.heapFix(fl)
	}
	w.flow = nil
}

// dropCandidate is the waiter CoDel sheds when it decides to drop: the
// oldest request of the heaviest flow in the lowest waiting class, so
// that sojourn shedding, too, falls on low priority and heavy tenants.
func (q *fairQueue) dropCandidate() *waiter {
	for i := numPriorities - 1; i >= 0; i-- {
		if q.classes[i].n > 0 {
			return q.classes[i].heaviest(nil, 0).list.head
		}
	}
	return nil
}

// dropReason is why sojourn shedding drops w, a dropCandidate: its
// tenant's backlog is over its fair share (ReasonTenant, a 429) when other
// tenants of its class wait or were just served, as at a full queue;
// otherwise the server as a whole is overloaded (ReasonCoDel, a 503).
func (q *fairQueue) dropReason(w *waiter) Reason {
	if q.othersServed(&q.classes[w.class], w.flow, w.req.Tenant) {
		return ReasonTenant
	}
	return ReasonCoDel
}

// tenants returns the number of flows tracked, for tests of the bound.
func (q *fairQueue) tenants() int {
	n := 0
	for i := range q.classes {
		n += len(q.classes[i].flows)
		if q.classes[i].newcomers != nil {
			n++
		}
	}
	return n
}

// The heap is hand-rolled rather than container/heap to avoid boxing flows
// in interfaces on every operation.
func (cl *fairClass) less(i, j int) bool {
	return cl.heap[i].list.head.start < cl.heap[j].list.head.start
}

func (cl *fairClass) swap(i, j int) {
	h := cl.heap
	h[i], h[j] = h[j], h[i]
	h[i].index, h[j].index = i, j
}

func (cl *fairClass) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !cl.less(i, p) {
			return
		}
		cl.swap(i, p)
		i = p
	}
}

func (cl *fairClass) down(i int) {
	for n := len(cl.heap); ; {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && cl.less(r, l) {
			m = r
		}
		if !cl.less(m, i) {
			return
		}
		cl.swap(i, m)
		i = m
	}
}

func (cl *fairClass) heapPush(fl *flow) {
	fl.index = len(cl.heap)
	cl.heap = append(cl.heap, fl)
	cl.up(fl.index)
}

func (cl *fairClass) heapRemove(fl *flow) {
	i, last := fl.index, len(cl.heap)-1
	if i != last {
		cl.swap(i, last)
	}
	cl.heap[last] = nil
	cl.heap = cl.heap[:last]
	if i != last {
		cl.heapFix(cl.heap[i])
	}
	fl.index = -1
}

func (cl *fairClass) heapFix(fl *flow) {
	cl.up(fl.index)
	cl.down(fl.index)
}

// burstCredit is how far behind the class's virtual time a flow that had
// nothing queued may start, in units of cost/weight: a tenant within its
// share on average gets its occasional burst served ahead of a tenant that
// is always backlogged, instead of being rationed to its share request by
// request. A flood never benefits: its queue never empties.
var burstCredit = 4.0
