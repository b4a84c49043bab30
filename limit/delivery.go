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
	// deliverySpan is how many consecutive windows one estimate averages:
	// 500 ms at AutoWindow, so that one noisy window is not a record.
	deliverySpan = 5
	// deliveryMinSamples is the fewest completions a window (for the RTT
	// now) or a span (for the records) needs to count.
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
//	rtt <= (1 + (Tolerance-1)/4) x minRTT:  B = max(B, 2L)
//	otherwise:                               B = max(B, L + sqrt(L))
//
// with BDP = ceil(maxRate x minRTT) and rtt the window's mean RTT. A cut
// goes to the knee itself, not above it: there nothing waits, so the
// windows after a cut see the no-load RTT again and keep minRTT true as
// the history rolls on (a cut to above the knee would record a loaded RTT
// as the lowest and ratchet the bound up every history length, the defect
// of Gradient2's drifting long-run RTT); additive growth then walks the
// bound up to the tolerance and the cycle repeats, the limit averaging
// about (1 + Tolerance)/2 times the knee. The bound never falls below the
// concurrency that delivered the best rate, so a cut loses no throughput
// and noise in the RTT costs little. An RTT high at or below the knee is
// not queueing but a slower service: the records are dropped and learnt
// again within deliverySpan windows, so the bound follows a capacity
// change instead of throttling the slower service for a history length.
// The rate record is taken over spans of deliverySpan windows, so that
// one lucky window does not set it; the RTT record is a single window's
// (the windows at low concurrency, at a start or right after a cut, are
// few). Until a window has enough completions, B is Max and holds.
//
// Observe is two atomic adds; tick runs under Auto's mutex.
type deliveryBound struct {
	n     atomic.Int64 // completions in the current window
	sumNs atomic.Int64 // their RTTs, in nanoseconds

	bound     float64
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
// or not, and returns the bound.
func (d *deliveryBound) tick(now time.Time, l int, binding bool) int {
	w := deliveryWindow{n: d.n.Swap(0), sumNs: d.sumNs.Swap(0), dur: AutoWindow}
	if !d.last.IsZero() && now.After(d.last) {
		w.dur = now.Sub(d.last)
	}
	d.last = now
	d.hist[d.next] = w
	d.next = (d.next + 1) % deliveryHistory
	d.filled = min(d.filled+1, deliveryHistory)

	maxRate, minRTT := d.records()
	if !binding || w.n < deliveryMinSamples || minRTT == 0 || maxRate == 0 {
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
	case rtt > d.tolerance*minRTT:
		d.bound = math.Min(d.bound, bdp)
	case rtt <= (1+(d.tolerance-1)/4)*minRTT:
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

// records returns the best delivery rate (per second), over spans of
// deliverySpan windows, and the lowest mean RTT (nanoseconds) of a window,
// over the history; 0 for what no span or window has enough completions
// for. The RTT is a window's: the windows at a low concurrency are few
// (a start, a cut to the knee) and must count.
func (d *deliveryBound) records() (maxRate, minRTT float64) {
	var n int64
	var dur time.Duration
	at := func(i int) deliveryWindow { // i-th oldest window in hist
		return d.hist[(d.next-d.filled+i+deliveryHistory)%deliveryHistory]
	}
	for i := range d.filled {
		w := at(i)
		if w.n >= deliveryMinSamples {
			if rtt := float64(w.sumNs) / float64(w.n); minRTT == 0 || rtt < minRTT {
				minRTT = rtt
			}
		}
		n, dur = n+w.n, dur+w.dur
		if i >= deliverySpan {
			old := at(i - deliverySpan)
			n, dur = n-old.n, dur-old.dur
		}
		if i >= deliverySpan-1 && n >= deliveryMinSamples && dur > 0 {
			maxRate = math.Max(maxRate, float64(n)/dur.Seconds())
		}
	}
	return maxRate, minRTT
}
