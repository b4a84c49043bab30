package admission

import (
	"math"
	"math/bits"
	"sync/atomic"
	"time"
)

// The latency histograms have fixed exponential buckets, so that recording
// is an index computation and two atomic adds: no lock, no allocation, no
// configuration to get wrong. Bucket i holds durations up to
// bucketBase<<i; the last holds the rest (+Inf). 50 µs doubling 22 times
// reaches 105 s, past any queue timeout or render worth timing, with a
// relative error of at most a factor of two, what Prometheus's own default
// buckets give.
const (
	bucketBase = 50 * time.Microsecond
	// HistogramBuckets is the number of finite buckets of a Histogram.
	HistogramBuckets = 22
)

// BucketBound returns the inclusive upper bound of a Histogram's bucket i,
// for i in [0, HistogramBuckets): 50 µs, 100 µs, 200 µs, ... 104.9 s.
func BucketBound(i int) time.Duration { return bucketBase << i }

// bucketOf returns the bucket of d: the first whose bound is at least d,
// HistogramBuckets (+Inf) past the last.
func bucketOf(d time.Duration) int {
	if d <= 0 {
		return 0
	}
	i := bits.Len64(uint64(d-1) / uint64(bucketBase))
	return min(i, HistogramBuckets)
}

// Histogram is a snapshot of one latency distribution. Its zero value is an
// empty histogram.
type Histogram struct {
	// Counts are the observations per bucket, not cumulative: Counts[i]
	// for i < HistogramBuckets holds those in (BucketBound(i-1),
	// BucketBound(i)]; Counts[HistogramBuckets] those above the last bound.
	Counts [HistogramBuckets + 1]uint64
	// Sum is the total of the observed durations.
	Sum time.Duration
}

// Count returns the number of observations.
func (h *Histogram) Count() uint64 {
	var n uint64
	for _, c := range h.Counts {
		n += c
	}
	return n
}

// Add adds o's observations to h, to sum a histogram over labels.
func (h *Histogram) Add(o *Histogram) {
	for i, c := range o.Counts {
		h.Counts[i] += c
	}
	h.Sum += o.Sum
}

// Quantile estimates the q-quantile (q in [0, 1]) as Prometheus's
// histogram_quantile does: linear interpolation inside the bucket that
// holds it, the lowest bucket starting at zero. It returns -1 for an empty
// histogram, and the last finite bound when the quantile is past it.
func (h *Histogram) Quantile(q float64) time.Duration {
	n := h.Count()
	if n == 0 || math.IsNaN(q) {
		return -1
	}
	rank := min(max(q, 0), 1) * float64(n)
	var below uint64
	for i, c := range h.Counts[:HistogramBuckets] {
		if c > 0 && float64(below+c) >= rank {
			lo := time.Duration(0)
			if i > 0 {
				lo = BucketBound(i - 1)
			}
			frac := (rank - float64(below)) / float64(c)
			return lo + time.Duration(frac*float64(BucketBound(i)-lo))
		}
		below += c
	}
	return BucketBound(HistogramBuckets - 1)
}

// histogram is the recording side of a Histogram: atomic counters that
// goroutines add to concurrently. A snapshot taken while they add may see
// an observation in its bucket but not yet in the sum; the error is one
// observation's duration, and gone by the next snapshot.
type histogram struct {
	counts [HistogramBuckets + 1]atomic.Uint64
	sum    atomic.Int64 // nanoseconds
}

// record adds n observations of d: one timed request standing for n.
func (h *histogram) record(d time.Duration, n uint64) {
	h.counts[bucketOf(d)].Add(n)
	if d > 0 {
		h.sum.Add(int64(d) * int64(n))
	}
}

func (h *histogram) load(into *Histogram) {
	for i := range h.counts {
		into.Counts[i] = h.counts[i].Load()
	}
	into.Sum = time.Duration(h.sum.Load())
}

// WaitOutcome is how a request's wait for a slot ended.
type WaitOutcome uint8

const (
	WaitAdmitted  WaitOutcome = iota // granted a slot, at once or after queueing
	WaitShed                         // refused: a 503 or 429 (see Reason)
	WaitCancelled                    // its caller gave up while it waited
	numWaitOutcomes
)

var waitOutcomeNames = [numWaitOutcomes]string{"admitted", "shed", "cancelled"}

// String returns the outcome's label value: admitted, shed or cancelled.
func (o WaitOutcome) String() string {
	if o < numWaitOutcomes {
		return waitOutcomeNames[o]
	}
	return "unknown"
}

// WaitOutcomes lists every WaitOutcome, for a label per outcome.
func WaitOutcomes() []WaitOutcome { return []WaitOutcome{WaitAdmitted, WaitShed, WaitCancelled} }

// ServiceOutcome is how a granted slot was given back with a sample.
type ServiceOutcome uint8

const (
	ServiceDone    ServiceOutcome = iota // Permit.Done, or DoneSample not Dropped
	ServiceDropped                       // DoneSample with Dropped: failed for overload
	numServiceOutcomes
)

var serviceOutcomeNames = [numServiceOutcomes]string{"done", "dropped"}

// String returns the outcome's label value: done or dropped.
func (o ServiceOutcome) String() string {
	if o < numServiceOutcomes {
		return serviceOutcomeNames[o]
	}
	return "unknown"
}

// ServiceOutcomes lists every ServiceOutcome, for a label per outcome.
func ServiceOutcomes() []ServiceOutcome { return []ServiceOutcome{ServiceDone, ServiceDropped} }

// Priorities lists the priority classes, highest first, for a label per
// class.
func Priorities() []Priority {
	return []Priority{CriticalPlus, Critical, SheddablePlus, Sheddable}
}

// Histograms is a snapshot of a Controller's latency histograms, by
// priority class and outcome. It holds no pointers: taking one allocates
// nothing.
type Histograms struct {
	wait    [numPriorities][numWaitOutcomes]Histogram
	service [numPriorities][numServiceOutcomes]Histogram
}

// QueueWait returns the distribution of the time requests of class p spent
// in Acquire before outcome o: zero for those admitted or shed at once,
// their time in the queue for the others.
func (h *Histograms) QueueWait(p Priority, o WaitOutcome) Histogram {
	if o >= numWaitOutcomes {
		return Histogram{}
	}
	return h.wait[p.classIndex()][o]
}

// Service returns the distribution of the time class p's requests held
// their slot, as given back by Permit.Done and Permit.DoneSample (the
// sample's RTT). Permit.Release gives a slot back untimed, and is not
// counted. Each observation counts as many requests as its sample stands
// for (limit.Sample.Weight): at a high rate, where the Controller times a
// sample of the requests, the counts and the sum are estimates, within
// a percent or so, of every request's.
func (h *Histograms) Service(p Priority, o ServiceOutcome) Histogram {
	if o >= numServiceOutcomes {
		return Histogram{}
	}
	return h.service[p.classIndex()][o]
}

// latencies are a Controller's recording histograms. Requests admitted on
// the fast path are not recorded here (that would add two atomic adds to
// it): they waited zero, and Histograms counts them from the fast path's
// per-class admission counters.
type latencies struct {
	wait    [numPriorities][numWaitOutcomes]histogram
	service [numPriorities][numServiceOutcomes]histogram
}

// waitOutcome classifies Acquire's error.
func waitOutcome(err error) WaitOutcome {
	switch _, shed := ShedReason(err); {
	case err == nil:
		return WaitAdmitted
	case shed:
		return WaitShed
	}
	return WaitCancelled
}

// Histograms returns a snapshot of the latency histograms. Like Stats it
// takes no lock: it reads counters that are being added to, so the
// histograms of one snapshot may disagree by the requests of an instant.
func (c *Controller) Histograms() Histograms {
	var h Histograms
	for ci := range numPriorities {
		for o := range numWaitOutcomes {
			c.lat.wait[ci][o].load(&h.wait[ci][o])
		}
		// The fast path's admissions waited zero.
		h.wait[ci][WaitAdmitted].Counts[0] += c.fastAdmitted[ci].load()
		for o := range numServiceOutcomes {
			c.lat.service[ci][o].load(&h.service[ci][o])
		}
	}
	return h
}
