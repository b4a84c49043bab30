package admission

import (
	"math"
	"time"
)

const (
	// standingDepth is the queue, in requests, that codelFloor lets stand
	// before a few slots are judged overloaded.
	standingDepth = 12

	// idleShare is the share of the time the slots may idle for want of a
	// queued request under an overload, and minDepth the least depth the
	// overload floor lets stand whatever the overload (see overloadDepth).
	idleShare = 0.01
	minDepth  = 2

	// calmSojourn is the least sojourn judged standing while the
	// Controller is not overloaded, and the most while it is (see codel).
	calmSojourn = 250 * time.Millisecond

	// calmLongest bounds the wait of a request served while the Controller
	// is not overloaded: a hand-tuned HAProxy's queue timeout (see codel).
	calmLongest = 500 * time.Millisecond

	// A regime window makes the Controller overloaded when more than
	// shedShare of its arrivals were shed for overload, or more than
	// excessShare were not admitted in it: shed, or still queued at its
	// end (see codel).
	shedShare   = 0.2
	excessShare = 0.4

	// Requests not admitted count towards excessShare only in a window
	// whose arrivals came faster than surgeShare times the rate at which
	// the slots admit while a queue stands (see codel).
	surgeShare = 1.5

	// Sheds count towards shedShare only while the arrivals' smoothed
	// rate is above loadShare times that busy rate (see codel).
	loadShare = 1.2

	// Once overloaded, the Controller stays so while the arrivals' smoothed
	// rate is above the busy rate and the smoothed share of them shed for
	// overload above holdShedShare (see codel).
	holdShedShare = 0.05

	// An overload's onset is also judged when the queue grew in onsetWindows
	// windows in a row, the slots keeping at least pacedShare of the busy
	// rate in each, while the arrivals' smoothed rate is above loadShare
	// times the busy rate (see codel).
	onsetWindows = 3
	pacedShare   = 0.8

	// regimeWindow is the shortest regime window, and regimeArrivals the
	// fewest arrivals it judges: a window that ends with fewer goes on.
	regimeWindow   = 100 * time.Millisecond
	regimeArrivals = 16

	// For lullPace after a lull, what the slots finish does not lower the
	// busy rate (see codel).
	lullPace = time.Second
)

// codelFloor is the least sojourn judged standing, given the mean service
// time, the slots serving the queue and the depth, in requests, it lets
// stand (see codel).
func codelFloor(service time.Duration, slots int64, depth float64) time.Duration {
	q := depth / float64(max(slots, 1))
	return time.Duration(float64(service) * max(q, 2*math.Sqrt(q)))
}

// overloadDepth is the depth, in requests, a queue needs under an overload
// of rho (arrivals over the rate the slots serve) so that the slots idle
// for want of one at most idleShare of the time: k with
// (rho-1)/(rho^(k+1)-1) = idleShare, a queue of k shedding its excess
// (see codel); standingDepth at most.
func overloadDepth(rho float64) float64 {
	if rho <= 1+idleShare {
		return standingDepth
	}
	k := math.Log1p((rho-1)/idleShare)/math.Log(rho) - 1
	return min(max(k, minDepth), standingDepth)
}

// codel decides, at each dequeue, whether a request has waited too long in
// a standing queue (CoDel's judgement, applied to requests).
//
// Like CoDel it judges sojourn time, not queue length, and only a standing
// queue: the queue enters the dropping state once the sojourn of dequeued
// requests has stayed at or above target for a whole interval, so a burst
// that drains within the interval is never punished.
//
// Unlike packet CoDel it does not then drop one request per
// interval/sqrt(count). That control law relies on each drop halving a TCP
// sender's rate; request arrivals do not slow down when one is shed, so the
// queue would reach its cap long before the drop rate caught up (at 1.5x
// load it needs about 10 s). Instead, as in Facebook's adaptive queue
// timeout ("Fail at Scale"), while dropping every dequeued request whose
// sojourn is at or above target is shed, and the state lasts until the
// queue empties. Served requests then wait at most about target.
//
// The target is a floor: sojourn is judged against the larger of it and a
// floor the Controller derives from what it measures, the mean service time
// S and the limit N (the slots that serve the queue):
//
//	floor = S x max(q, 2 sqrt(q)),  q = standingDepth / N
//
// A queue that keeps every slot busy through the randomness of arrivals
// and service times is not a standing queue to fight: shedding it leaves
// slots idle at loads they could carry. How deep that queue runs depends on
// the slots. With few slots (one or two single-threaded renderers) a queue
// stands whenever offered load reaches capacity, and a shed threshold of k
// requests sheds about 1/(2k+1) of them there (the random walk of a queue
// at utilisation 1); standingDepth (12) requests, S x 12/N, keeps that
// under 5% (measured in simulation: 10 requests shed 5.4%): at two
// renderers of 12 ms, 72 ms. With many slots the queue's
// natural swing grows only as the square root of the slots, so the floor
// falls to about two service times at ten slots (measured: one service
// time shed 1.5% at 0.95x there, two none) and below one at sixty (async
// workers: their requests mostly wait on I/O, and queueing longer than
// their own I/O wait only doubles the latency). Where service times are
// well under the target (an API answering in a millisecond), the target
// rules.
//
// The floor is what a queue may stand to under overload (at a depth that
// falls as the overload grows: below). At or below capacity a queue also
// stands, and sheds there are goodput thrown away:
//
//   - At exactly capacity the queue is a random walk with nothing pulling
//     it back, and a shed threshold of k requests sheds about 1/(k+1) of
//     them; the floor's twelve requests shed 4-5%. A queue timeout of half
//     a second (a hand-tuned HAProxy's) sheds 1%.
//   - Below capacity a stall (a neighbour taking the CPU for a few hundred
//     milliseconds, a GC pause) builds a queue that drains by itself once
//     it passes; shedding it past the floor throws away up to a stall's
//     worth of requests that the slots would have served a second later.
//
// So the floor applies only while the Controller is overloaded: while in
// the last regime window more than shedShare (a fifth) of the arrivals
// were shed for overload (by CoDel, the queue's size or timeout, a
// tenant's or a priority's displacement, saturation), or more than
// excessShare (two fifths) were not admitted, shed or still queued at its
// end. A window lasts at least 100 ms and until 16 requests have arrived
// in it. Otherwise, calm, a queue is judged standing only once its
// sojourn passes calmSojourn (250 ms), or the floor if that is longer.
//
// Both are bounded. Twelve requests are a long wait where renders are
// slow: two renderers of 150 ms sharing a core (300 ms a render) have a
// floor of 1.8 s, and it grows with the service time it measures. Clients
// give up long before (a second in the suite; a person sooner), and a
// request served after its client left is a render thrown away: at 2x,
// sluice answered 0.5-1.2 requests/s in time where HAProxy, with its
// 500 ms queue, answered 4-8.5. So, overloaded, the floor is at most
// calmSojourn; calm, a queue is judged standing at most calmLongest
// (500 ms, a hand-tuned HAProxy's queue timeout) less an interval, so
// that the requests it serves have waited about as long as HAProxy's at
// most (a request is judged when a slot frees for it, up to a render
// later).
// Where the floor is under 250 ms (a service time under about 40 ms on
// two renderers, every async worker measured) neither bound binds.
//
// A queue grows when more arrives than the slots admit, and that has two
// causes: arrivals surged, or the slots slowed (a stall). Only the first is
// an overload; the second passes, and its backlog is served once it has.
// So the requests not admitted count only in a window whose arrivals came
// faster than surgeShare (half again) the busy rate: the rate at which the
// slots finished requests in the windows that began and ended with a
// queue (not their admissions: a limit raised admits a bunch at once, and
// an estimate that follows a rise faster than a fall took such bunches
// for capacity, which held quiet async workers calm at 2x), which
// follows a rise within a window or two and a fall over about eight (a
// stall's windows pull it down little; a fall that lasts, as when a
// worker is gone, it follows, and arrivals then surge past it). Before
// the first busy window the queue's growth alone judges. In simulation
// (two renderers of 10 ms, stalls of 50-250 ms at a third of the speed)
// this served 99.1% at 0.95x against 97.7%, and 98.9% at 0.9x with a stall
// a second against 97.6%, with the same onset at 2x.
//
// Sheds too have two causes. Past about 1.2x they are an overload's. At
// about capacity a queue drifts up to calmSojourn, and when CoDel begins
// dropping, the requests that passed it over its interval go at once: a
// fifth of a window's arrivals, which turned the regime overloaded, whose
// floor then shed the rest of the queue, requests the slots were about to
// serve (a React suite run at 1x lost 4-8% so, in bursts of a whole
// queue). So the sheds count only while the arrivals' rate, smoothed over
// the windows (each weighing a quarter), is above loadShare (1.2) times
// the busy rate; before the first busy window they count always. Two
// React suite runs at 1x served 100% with it, against 97.1% and 96.2%
// beside it without (HAProxy 100%); in simulation 1.02x served 99.1%
// against 98.0%, 1.1x 92.3% against 91.1%, the same p99 (the queue stands
// at the calm sojourn instead of climbing to it and being shed), and the
// same at 1.5x and beyond.
//
//   - Under overload a third of the arrivals are shed at 1.5x, half at 2x,
//     so the floor rules. At an overload's onset the queue grows by half
//     the arrivals at 2x before anything is shed: counting it judges the
//     onset within a window or two, before the queue has stood 250 ms.
//   - At capacity a window's queue grows or shrinks by chance, and only
//     now and then by two fifths of its arrivals; a single such window
//     sheds nothing, since CoDel then needs a whole interval above the
//     floor. Calm holds.
//   - Between (about 1.1x-1.2x) either regime may rule: goodput is the
//     same, and the served wait up to 250 ms. Past it the hold below keeps
//     the regime overloaded.
//
// An overload's regime is held. Under the floor CoDel sheds in bursts,
// each lasting until the queue empties, so that at 1.2x-1.6x a window now
// and then sheds nothing and grows the queue by less than two fifths of
// its arrivals. Judged alone, such a window turned the regime calm; the
// queue then stood to the calm sojourn, and a burst of sheds turned it
// back, a cycle of about a second (a Hypernova suite run at about 1.5x
// its workers' capacity: p99 446 ms against 117 at 2x, with 250 ms
// buckets in which all but 5% were shed). So once overloaded the regime
// stays so while the arrivals' smoothed rate is above the busy rate and
// the share of them shed for overload, smoothed the same way, above
// holdShedShare (5%). When the load falls back to capacity the first ends
// it within a few windows; an onset judged by a stall's queue alone, which
// sheds nothing, is never held. In simulation (stall_test.go) 1.3x was
// overloaded in 90-95% of the windows against 25-31% without the hold,
// 1.6x in 98% against 73-80%, and the p99 of the served past the first
// 5 s fell from 272 to 101 ms at 1.3x and from 243 to 102 ms at 1.6x
// (first in first out), with the same goodput.
//
// The onset of such an overload is judged by the queue's growth. From
// idle at 1.2x-1.6x the queue grows by less than two fifths of the
// arrivals a window, so that it stood to the calm sojourn before the first
// burst of sheds turned the regime overloaded: over 10 s of it, a p99 of
// 262-273 ms. So the regime is also overloaded once the queue has grown
// in onsetWindows (3) windows in a row, in each of which the slots kept
// their pace (finished at least pacedShare, 0.8, of the busy rate; a
// window that did not begin with a queue counts, as nothing measures its
// pace), while the arrivals' smoothed rate is above loadShare (1.2) times
// the busy rate. A stall slows the slots, so its windows do not count; at
// capacity the arrivals do not outrun the busy rate by a fifth. In
// simulation the p99 of 10 s from idle fell to 146 ms at 1.3x and 112 ms
// at 1.6x (first in first out), and stalls at 0.9x-1x were queued through
// as before. A window that waited through a lull for its arrivals (its
// rate under a quarter of the smoothed one, over more than two windows'
// time) is not folded into the smoothed rate but resets it, and the next
// window sets it afresh: folded in, it held the rate a quarter down for
// the windows after, so that a load resumed past capacity was judged half
// a second late (a Hypernova suite run's 1x, after the idle between its
// phases, stood to the calm sojourn for 750 ms).
//
// Workers are slow for a while after an idle spell: a Node.js worker's
// code, unused, is dropped by V8 and compiled again; caches are cold, the
// CPU clocked down. Two Hypernova workers behind sluice, warm and
// offered 0.8x of what they served, answered in 15-27 ms instead of 5-6 for
// the first 0.8 s after 30 s idle, finishing 65-190/s of 280. The busy
// rate followed that fall, so the arrivals, no faster than before, passed
// 1.2 times it; the queue meanwhile stood to the calm sojourn and was
// shed past it, those sheds turned the regime overloaded, and the floor
// then shed the whole backlog at once: 7-9% of a 5 s load lost, where a
// hand-tuned HAProxy's 500 ms queue served it all. So for lullPace (a
// second) after a lull the busy rate does not fall: the pace the slots
// kept before it still judges the arrivals, and a backlog of the slots'
// warming is queued through as a stall's (what stands past the calm
// sojourn is still shed). Side by side, loads resuming after 35 s idle
// at 0.8x and 0.9x were served 97.1% and 94.8% (medians of six) against
// 92.6% and 91.0% (internal/eval/gap/idle-ab.sh). An overload, arrivals
// past the pace the slots kept, is judged as before, and its onset by
// the queue's growth without the pace warming slots do not keep:
// required, it held off the onset of about 1.4x after idle until the
// calm queue had stood to 250 ms (p99 227 ms against 67 without it, the
// medians of six 5 s loads at 420/s).
//
// Under overload the floor's depth follows the overload. Twelve requests
// keep the slots busy through a queue's random walk at capacity; past it
// the arrivals refill the queue the faster the heavier the overload, and a
// queue of k requests that sheds its excess leaves the slots idle for want
// of one (rho-1)/(rho^(k+1)-1) of the time at rho times capacity (a queue
// of bounded size, M/M/1/k). So, overloaded, the depth is the k that makes
// that idleShare (1%) at the overload measured, the arrivals' smoothed
// rate over the busy rate: twelve requests up to about 1.2x (which would
// need sixteen), 8.7 at 1.5x, 5.7 at 2x, 3.1 at 4x, 2.2 at 8x, two at
// least. Twelve requests of a heavy render are a long wait: two renderers
// of 40 ms (four slots with their lookahead) stood a queue of 250 ms at
// every overload, the requests shed hearing their 503 after 259-261 ms at
// 4x and 8x; with the overload's depth after 155 and 132 ms, the p99 of
// the served 169 and 162 ms against 290 and 278 (newest first), with the
// same goodput (stall_test.go).
//
// In simulation (stall_test.go: two renderers of 10 ms) this served 99.1%
// at exactly capacity against 95.7% with the floor alone, and 98.9% at
// 0.9x with stalls against 97.1%, with the same goodput at 2x and 4x, the
// sheds answered as fast, and a p99 over a 10 s overload of 116 ms at 2x
// and 47 ms at 4x (newest first; 127 and 108 ms first in first out).
//
// Pure: time is a parameter. Not safe for concurrent use (the Controller
// calls it under its mutex).
type codel struct {
	target, interval time.Duration

	firstAbove time.Time // when sojourn may be judged standing; zero: below target
	dropping   bool

	// The regime: overloaded while the last window's arrivals were shed,
	// or not admitted, in more than their shares (see roll).
	overloaded  bool
	windowStart time.Time
	windowEnd   time.Time // the current window's earliest end; zero: not begun
	arrivals    uint64    // the Controller's arrivals when the window began
	admitted    uint64    // its admissions
	sheds       uint64    // its sheds for overload
	queued      int       // its queue
	inflight    int64     // the requests it held

	// busyRate is the rate, per second, at which the slots finished
	// requests in windows that began and ended with a queue; 0 before the
	// first.
	busyRate float64
	// paceUntil is when, after a lull, the busy rate may fall again.
	paceUntil time.Time
	// arrivalRate is the arrivals' rate, per second, smoothed over the
	// windows judged; 0 before the first and after a lull.
	arrivalRate float64
	// shedAvg is the share of the arrivals shed for overload, smoothed
	// over the windows judged.
	shedAvg float64
	// grew counts the windows in a row in which the queue grew while the
	// slots kept their pace.
	grew int
}

// due reports whether the regime window may end at now: the Controller
// then calls roll with its counts.
func (c *codel) due(now time.Time) bool { return !now.Before(c.windowEnd) }

// roll ends the regime window at now, given the Controller's counts so
// far: its arrivals (admitted, shed, given up or queued), its admissions,
// its sheds for overload (see Controller.overloadSheds), its queue now and
// the requests it holds. Over the window, the sheds and the queue's growth
// are what arrived and was not admitted; a window that began and ended
// with a queue gives the busy rate the rate at which its slots finished
// requests. A window with fewer than
// regimeArrivals arrivals goes on.
func (c *codel) roll(now time.Time, arrivals, admitted, sheds uint64, queued int, inflight int64) {
	if !c.windowEnd.IsZero() {
		// Signed: a waiter that gave up leaves the queue an instant before
		// it is counted as cancelled, so the counts may step back by one.
		n := int64(arrivals - c.arrivals)
		if n < regimeArrivals {
			return
		}
		elapsed := now.Sub(c.windowStart).Seconds()
		shed := float64(sheds - c.sheds)
		excess := shed + float64(queued-c.queued)
		rate := float64(n) / elapsed
		switch {
		case c.arrivalRate == 0:
			c.arrivalRate = rate
		case rate < c.arrivalRate/4 && elapsed > 2*regimeWindow.Seconds():
			// A lull: the window waited for its arrivals, most of which
			// came at its end. Its rate says nothing of the load now, and
			// folded in it held the smoothed rate a quarter down for the
			// windows after; the next window's sets it afresh.
			c.arrivalRate = 0
			c.paceUntil = now.Add(lullPace)
		default:
			c.arrivalRate += (rate - c.arrivalRate) / 4
		}
		c.shedAvg += (shed/float64(n) - c.shedAvg) / 4
		surge := c.busyRate == 0 || rate > surgeShare*c.busyRate
		loaded := c.busyRate == 0 || c.arrivalRate > loadShare*c.busyRate
		held := c.overloaded && c.busyRate > 0 && c.arrivalRate > c.busyRate && c.shedAvg > holdShedShare
		// A window that began and ended with a queue measures what the
		// slots finished: the admitted less those still held. Not the
		// admissions alone, which a limit raised (a worker's probe up)
		// bunches into one window. A window that did not is taken to have
		// kept the pace, as nothing measures it.
		busy := c.queued > 0 && queued > 0
		r := 0.0
		if busy {
			r = max(float64(admitted-c.admitted)-float64(inflight-c.inflight), 0) / elapsed
		}
		// Warming after a lull the slots keep no pace; the busy rate
		// held judges what outruns the one they kept before it.
		if queued > c.queued && (!busy || r >= pacedShare*c.busyRate || now.Before(c.paceUntil)) {
			c.grew++
		} else {
			c.grew = 0
		}
		onset := c.grew >= onsetWindows && c.busyRate > 0 && loaded
		c.overloaded = shed > shedShare*float64(n) && loaded || excess > excessShare*float64(n) && surge || held || onset
		if busy {
			switch {
			case c.busyRate == 0:
				c.busyRate = r
			case r > c.busyRate:
				c.busyRate += (r - c.busyRate) / 2
			case now.Before(c.paceUntil):
				// Warming after a lull: not the slots' pace.
			default:
				c.busyRate += (r - c.busyRate) / 8
			}
		}
	}
	c.arrivals, c.admitted, c.sheds, c.queued, c.inflight = arrivals, admitted, sheds, queued, inflight
	c.windowStart, c.windowEnd = now, now.Add(regimeWindow)
}

// judged returns the sojourn past which a queue is standing, given the
// floor the Controller measured: under overload the floor, at most
// calmSojourn; otherwise the floor, at least calmSojourn and at most
// calmLongest less an interval (a queue judged standing is shed only an
// interval later).
func (c *codel) judged(floor time.Duration) time.Duration {
	if c.overloaded {
		return min(floor, calmSojourn)
	}
	return max(min(floor, calmLongest-c.interval), calmSojourn)
}

// depth returns the depth, in requests, the floor lets stand: under an
// overload measured (the arrivals' smoothed rate over the busy rate) what
// keeps the slots busy through it, otherwise standingDepth (see codel).
func (c *codel) depth() float64 {
	if !c.overloaded || c.busyRate == 0 {
		return standingDepth
	}
	return overloadDepth(c.arrivalRate / c.busyRate)
}

// shouldDrop records the sojourn of the request CoDel would shed, judged
// at now with queued requests waiting (it among them) against the larger
// of the target and floor (see codelFloor), and reports whether it is to
// be shed instead of served.
//
// A lone waiter is never shed and does not make a queue standing, as
// packet CoDel keeps its last packet: a slot is free, serving it costs no
// one anything, and shedding it would leave the slot idle.
func (c *codel) shouldDrop(now time.Time, sojourn, floor time.Duration, queued int) bool {
	if sojourn < max(c.target, floor) || queued <= 1 {
		if !c.dropping {
			c.firstAbove = time.Time{}
		}
		return false
	}
	if c.dropping {
		return true
	}
	if c.firstAbove.IsZero() {
		c.firstAbove = now.Add(c.interval)
		return false
	}
	if now.Before(c.firstAbove) {
		return false
	}
	c.dropping = true
	return true
}

// empty records that the queue has drained: the standing queue is gone.
func (c *codel) empty() {
	c.firstAbove = time.Time{}
	c.dropping = false
}

// standing reports whether sojourn is currently above target: a standing
// queue, during which adaptive LIFO serves newest first.
func (c *codel) standing() bool { return !c.firstAbove.IsZero() || c.dropping }
