package limit

import (
	"math"
	"sync/atomic"
	"time"
)

// Constants of the delivery bound; deliveryBound's documentation explains
// them.
const (
	// deliveryHistory is how many windows the best rate and the lowest
	// RTT are remembered for: 10 s at AutoWindow. A service that got
	// slower for good is re-learnt within it.
	deliveryHistory = 100
	// deliveryMinSamples is the fewest completions a window needs to
	// count.
	deliveryMinSamples = 10
)

// deliveryBound is Auto's bound for what the CPUs cannot show: a
// downstream with its own concurrency cap (a connection pool, a
// semaphore, a rate-limited API). Past that cap the CPUs stay idle however
// many requests wait, but the requests completed per second stop growing
// and each one's RTT grows with the concurrency instead. The bound is the
// bandwidth-delay product of that pipe, as BBR computes it for a TCP
// connection: the best delivery rate seen (completions per second) times
// the lowest RTT seen, both over the last deliveryHistory windows, is the
// concurrency the service actually serves; more only queues (Little's
// law). Every window in which the limit binds:
//
//	rtt > Tolerance x minRTT, L > BDP:      B = min(B, BDP)   (queueing: cut to the knee)
//	rtt > Tolerance x minRTT, L <= BDP:     forget the records (the service got slower)
//	otherwise (rtt within the tolerance):   B = max(B, L + sqrt(L)), or 2L from a forget to the next cut
//
// with BDP = ceil(maxRate x minRTT) and rtt the window's mean RTT. A cut
// goes to the knee itself, not above it: there nothing waits, so the
// windows after a cut see the no-load RTT again and keep minRTT true as
// the history rolls on (a cut to above the knee would record a loaded RTT
// as the lowest and ratchet the bound up every history length, the defect
// of Gradient2's drifting long-run RTT); growth by sqrt(L) a window (never
// doubling, which would overshoot the knee twofold after every cut) then
// walks the bound up to the tolerance and the cycle repeats, the limit
// averaging about (1 + Tolerance)/2 times the knee. B starts at Max, so
// nothing bounds a service that never showed a knee. The bound never falls below the
// concurrency that delivered the best rate, so a cut loses no throughput
// and noise in the RTT costs little. An RTT high at or below the knee is
// not queueing but a slower service: the records are dropped and learnt
// again from the next windows, and the bound doubles while the RTT stays
// within the tolerance until the next cut, so it follows a capacity change
// within a second or two instead of throttling the slower service for a
// history length. While
// goroutines wait for the CPUs the bound holds: the RTT then grows with
// the CPUs' queue, which the CPU rule reads better. Until a window has
// enough completions, B is Max and holds.
//
// Observe is two atomic adds; tick runs under Auto's mutex.
type deliveryBound struct {
	n     atomic.Int64 // completions in the current window
	sumNs atomic.Int64 // their RTTs, in nanoseconds

	bound     float64
	relearn   bool // since the records were dropped, and until a cut
	tolerance float64
	max       float64
	last      time.Time
	hist      [deliveryHistory]deliveryWindow
	next      int // index in hist of the next window
	filled    int // windows in hist
}

// deliveryWindow is one closed window's completions.
type deliveryWindow struct {
	n     int64
	sumNs int64
	dur   time.Duration
}

func newDeliveryBound(tolerance float64, max int) *deliveryBound {
	return &deliveryBound{bound: float64(max), tolerance: tolerance, max: float64(max)}
}

// observe records a completed request. Dropped requests (timeouts, a
// downstream's shed) say nothing about the pipe's RTT and are not counted.
func (d *deliveryBound) observe(s Sample) {
	if s.Dropped || s.RTT <= 0 {
		return
	}
	d.sumNs.Add(int64(s.RTT))
	d.n.Add(1)
}

// tick closes the window ending at now, in which the limit l was binding
// or not, and returns the bound. While goroutines wait for the CPUs
// (cpuWait), RTTs grow with the CPU's queue, not a downstream's, and the
// bound holds: the CPU rule is the one to act.
func (d *deliveryBound) tick(now time.Time, l int, binding, cpuWait bool) int {
	w := deliveryWindow{n: d.n.Swap(0), sumNs: d.sumNs.Swap(0), dur: AutoWindow}
	if !d.last.IsZero() && now.After(d.last) {
		w.dur = now.Sub(d.last)
	}
	d.last = now
	d.hist[d.next] = w
	d.next = (d.next + 1) % deliveryHistory
	d.filled = min(d.filled+1, deliveryHistory)

	maxRate, minRTT := d.records()
	if !binding || cpuWait || w.n < deliveryMinSamples || minRTT == 0 || maxRate == 0 {
		return d.limit()
	}
	rtt := float64(w.sumNs) / float64(w.n)
	L := float64(l)
	switch bdp := math.Ceil(maxRate * minRTT / float64(time.Second)); {
	case rtt > d.tolerance*minRTT && L <= bdp:
		// Slow at or below the knee: nothing queues, the service itself
		// got slower (a slower downstream, a loaded machine). The records
		// describe the service it was; learn anew from this window.
		d.forget()
		d.relearn = true
	case rtt > d.tolerance*minRTT:
		d.bound = math.Min(d.bound, bdp)
		d.relearn = false
	case d.relearn:
		d.bound = math.Max(d.bound, 2*L)
	default:
		d.bound = math.Max(d.bound, L+math.Max(1, math.Sqrt(L)))
	}
	d.bound = math.Min(math.Max(d.bound, 1), d.max)
	return d.limit()
}

// forget drops every window but the last from the history.
func (d *deliveryBound) forget() { d.filled = 1 }

func (d *deliveryBound) limit() int { return int(d.bound) }

// records returns the best delivery rate (per second) and the lowest mean
// RTT (nanoseconds) of a window in the history; 0 while no window had
// enough completions. Both are single windows': the windows at a low
// concurrency (a start, right after a cut) are few and must count, and
// the rate record must not lag a limit that is growing (a lagging record
// under-states the knee and throttles). One window's noise biases both
// records towards a higher knee, never a lower one.
func (d *deliveryBound) records() (maxRate, minRTT float64) {
	for i := range d.filled {
		w := d.hist[(d.next-d.filled+i+deliveryHistory)%deliveryHistory]
		if w.n < deliveryMinSamples || w.dur <= 0 {
			continue
		}
		maxRate = math.Max(maxRate, float64(w.n)/w.dur.Seconds())
		if rtt := float64(w.sumNs) / float64(w.n); minRTT == 0 || rtt < minRTT {
			minRTT = rtt
		}
	}
	return maxRate, minRTT
}
