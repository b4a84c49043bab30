package limit

import (
	"math"
	"sync/atomic"
	"time"
)

// Constants of the delivery bound; deliveryBound's documentation explains
// them.
const (
	// deliveryHistory is how long the best rate and the lowest RTT are
	// remembered. A service that got slower for good is re-learnt within
	// it, or at once when a halving shows it (see deliveryBound).
	deliveryHistory = 10 * time.Second
	// deliveryRounds bounds the rounds kept: at least one window each, so
	// deliveryHistory at AutoWindow.
	deliveryRounds = int(deliveryHistory / AutoWindow)
	// deliveryMinSamples is the fewest samples (timed completions) a
	// round needs to count.
	deliveryMinSamples = 10
	// deliveryKeep is the share of the rate before a cut that the rate
	// after it must keep for the cut to stand: a cut to the knee loses no
	// throughput, so a loss beyond a window's noise means the records
	// that set the knee describe another service.
	deliveryKeep = 0.6
	// deliveryGain is the growth of the bound a round while the RTT stays
	// within the tolerance, for bounds above 16 (below, sqrt(L) is more):
	// BBR's probing gain, which overshoots the knee by at most a quarter.
	deliveryGain = 1.25
)

// deliveryBound is Auto's bound for what the CPUs cannot show: a
// downstream with its own concurrency cap (a connection pool, a
// semaphore, a rate-limited API). Past that cap the CPUs stay idle however
// many requests wait, but the requests completed per second stop growing
// and each one's RTT grows with the concurrency instead. The bound is the
// bandwidth-delay product of that pipe, as BBR computes it for a TCP
// connection: the best delivery rate seen (completions per second) times
// the lowest RTT seen, both over the last deliveryHistory, is the
// concurrency the service actually serves; more only queues (Little's
// law).
//
// The unit is a round: consecutive windows at one limit, summed until they
// hold deliveryMinSamples completions (one window at any useful rate; a
// few when a low limit meets a long RTT, which would otherwise never count
// and freeze the bound wherever it was). Every round in which the limit
// bound throughout:
//
//	rtt > Tolerance x minRTT, L > BDP:    B = BDP, then verify           (queueing: cut to the knee)
//	rtt > Tolerance x minRTT, L <= BDP:   B = L/2, then verify           (slower, or a cap the rate record overstates)
//	otherwise, after a forget:            B = max(B, 2L)                 (relearning: up to the next cut)
//	otherwise:                            B = max(B, L + max(sqrt(L), L/4))
//
// with BDP = ceil(maxRate x minRTT) and rtt the round's mean RTT. The
// round after a cut verifies it, since both records can be stale: a
// workload that changed (handlers of 50 ms where handlers of 10 ms ran)
// pairs one service's best rate with another's lowest RTT, a knee far too
// low. Once such a bound binds, every round completes exactly
// limit/RTT, so the records would agree with the knee that produced them
// and nothing would ever probe above it. So: if the round at the lower
// limit delivered less than deliveryKeep of the rate before the cut, the
// cut cost throughput, which a cut to the true knee never does; the
// records are dropped (kept from this round on), B goes back to the limit
// before the cut and relearns. A halving that kept the rate shows a queue
// at a cap the best rate no longer describes (a cap that appeared): the
// rate records are dropped, and the next round cuts to the cap's knee. A
// halving that lost the rate shows a slower service: it relearns from
// there, doubling the bound while the RTT stays within the tolerance. A
// cut the limit did not follow (the floor held it) cannot be verified and
// relearns too.
//
// A cut goes to the knee itself, not above it: there nothing waits, so the
// rounds after a cut see the no-load RTT again and keep minRTT true as the
// history rolls on (a cut to above the knee would record a loaded RTT as
// the lowest and ratchet the bound up every history length, the defect of
// Gradient2's drifting long-run RTT). Growth by a quarter (BBR's probing
// gain, never doubling, which would overshoot the knee twofold after every
// cut) then walks the bound up to the tolerance and the cycle repeats, the
// limit averaging about 1.3 times the knee, and a cap that disappears is
// left behind within about a second. B starts at Max, so nothing bounds a
// service that never showed a knee. While the CPUs are the bottleneck
// (goroutines wait for them, or they are 90% busy) the bound holds and the
// windows are left out of the records: the RTT then grows with the CPUs'
// queue, which the CPU rule reads better, and a CPU-bound phase's records
// would set a wrong knee for the phase after it. Until a round has enough
// completions, B holds.
//
// A round counts completions by the samples' weight (the delivery rate)
// and averages the RTT over the samples: a caller that times one request
// in k gives the same rate and a mean of the same RTTs.
//
// Observe is three atomic adds; tick runs under Auto's mutex.
type deliveryBound struct {
	n       atomic.Int64 // completions in the current window, by weight
	samples atomic.Int64 // samples in it
	sumNs   atomic.Int64 // their RTTs, in nanoseconds

	bound     float64
	relearn   bool // since the records were dropped, and until a cut
	tolerance float64
	max       float64
	last      time.Time

	round deliveryRound // the open round
	hist  [deliveryRounds]deliveryRound
	next  int // index in hist of the next round
	// rttFrom and rateFrom drop the records of rounds that ended before
	// them: the service they describe is gone.
	rttFrom, rateFrom time.Time

	check deliveryCheck // the cut the next round verifies
}

// deliveryRound is a closed round's completions, or the open one's so far.
type deliveryRound struct {
	n       int64 // completions
	samples int64
	sumNs   int64
	dur     time.Duration
	end     time.Time
	l       int  // the limit during the round
	bound   bool // the limit bound in every window of it
}

func (r deliveryRound) rate() float64 { return float64(r.n) / r.dur.Seconds() }
func (r deliveryRound) rtt() float64  { return float64(r.sumNs) / float64(r.samples) }

// deliveryCheck is a cut awaiting the next round's verdict.
type deliveryCheck struct {
	pending bool
	halving bool    // a halving at or below the knee, not a cut to it
	l       int     // the limit before the cut
	rate    float64 // the rate it delivered
}

func newDeliveryBound(tolerance float64, max int) *deliveryBound {
	return &deliveryBound{bound: float64(max), tolerance: tolerance, max: float64(max)}
}

// observe records a sample of s.Weight completed requests. Dropped
// requests (timeouts, a downstream's shed) say nothing about the pipe's
// RTT and are not counted.
func (d *deliveryBound) observe(s Sample) {
	if s.Dropped || s.RTT <= 0 {
		return
	}
	d.sumNs.Add(int64(s.RTT))
	d.samples.Add(1)
	d.n.Add(int64(max(s.Weight, 1)))
}

// tick closes the window ending at now, in which the limit l was binding
// or not, and returns the bound. While the CPUs are the bottleneck (cpu:
// goroutines wait for them, or they are busy), the completions measure
// the CPUs' pipe, not a downstream's: the window is left out of the
// records and the bound holds, the CPU rule being the one to act. Records
// of a CPU-bound phase would otherwise set the knee of the I/O-bound phase
// after it (its short RTT with the new, longer one).
func (d *deliveryBound) tick(now time.Time, l int, binding, cpu bool) int {
	dur := AutoWindow
	if !d.last.IsZero() && now.After(d.last) {
		dur = now.Sub(d.last)
	}
	d.last = now
	n, samples, sumNs := d.n.Swap(0), d.samples.Swap(0), d.sumNs.Swap(0)
	if cpu {
		d.round, d.check = deliveryRound{}, deliveryCheck{}
		return d.limit()
	}
	if d.round.dur == 0 || d.round.l != l {
		d.round = deliveryRound{l: l, bound: true}
	}
	r := &d.round
	r.n, r.samples, r.sumNs, r.dur, r.end = r.n+n, r.samples+samples, r.sumNs+sumNs, r.dur+dur, now
	r.bound = r.bound && binding
	if r.samples < deliveryMinSamples {
		return d.limit()
	}
	closed := *r
	d.round = deliveryRound{}
	d.hist[d.next] = closed
	d.next = (d.next + 1) % deliveryRounds
	if closed.bound {
		d.apply(closed)
	}
	d.bound = math.Min(math.Max(d.bound, 1), d.max)
	return d.limit()
}

// apply runs the rule on a round in which the limit bound throughout.
func (d *deliveryBound) apply(r deliveryRound) {
	rate, rtt, L := r.rate(), r.rtt(), float64(r.l)
	if c := d.check; c.pending {
		d.check = deliveryCheck{}
		switch {
		case L > 0.9*float64(c.l):
			// The limit did not follow the cut (the floor held it), so
			// the knee cannot be verified: a bound left below the floor
			// would be cut again every round and keep the CPU rule from
			// growing, for ever. The records are no better than the
			// knee they gave; learn anew.
			d.forget(r.end)
			d.relearn = true
		case rate < deliveryKeep*c.rate:
			// The lower limit delivered less: the knee was wrong.
			d.forget(r.end)
			d.bound = math.Max(d.bound, float64(c.l))
			d.relearn = true
			return
		case c.halving:
			// Half the concurrency delivered the same: the requests
			// queued at a cap, and the best rate recorded is gone.
			d.rateFrom = r.end
		}
	}
	maxRate, minRTT := d.records(r.end)
	if maxRate == 0 || minRTT == 0 {
		return
	}
	switch bdp := math.Ceil(maxRate * minRTT / float64(time.Second)); {
	case rtt > d.tolerance*minRTT && L > bdp:
		d.bound = math.Min(d.bound, bdp)
		d.relearn = false
		d.check = deliveryCheck{pending: true, l: r.l, rate: rate}
	case rtt > d.tolerance*minRTT:
		// Slow at or below the knee: either the service itself got
		// slower (the records describe the service it was), or requests
		// queue at a cap that delivers less than the best rate recorded.
		// Halving tells them apart: a queue's rate holds, a slower
		// service's halves.
		d.bound = math.Ceil(L / 2)
		d.relearn = false
		d.check = deliveryCheck{pending: true, halving: true, l: r.l, rate: rate}
	case d.relearn:
		d.bound = math.Max(d.bound, 2*L)
	default:
		d.bound = math.Max(d.bound, L+math.Max(1, math.Max(math.Sqrt(L), L*(deliveryGain-1))))
	}
}

// forget drops the records of every round before the one ending at end.
func (d *deliveryBound) forget(end time.Time) { d.rttFrom, d.rateFrom = end, end }

func (d *deliveryBound) limit() int { return int(d.bound) }

// records returns the best delivery rate (per second) and the lowest mean
// RTT (in nanoseconds) of the rounds that ended within deliveryHistory of
// now, and not before their record was dropped. Means over a
// round, not single requests: a single fast request is not the pipe's RTT,
// and one round's noise biases both records towards a higher knee, never
// a lower one.
func (d *deliveryBound) records(now time.Time) (maxRate, minRTT float64) {
	for _, r := range d.hist {
		if r.samples < deliveryMinSamples || r.dur <= 0 || r.end.Before(d.rttFrom) || now.Sub(r.end) >= deliveryHistory {
			continue
		}
		if rtt := r.rtt(); minRTT == 0 || rtt < minRTT {
			minRTT = rtt
		}
		if !r.end.Before(d.rateFrom) {
			maxRate = math.Max(maxRate, r.rate())
		}
	}
	return maxRate, minRTT
}
