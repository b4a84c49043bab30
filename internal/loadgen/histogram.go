package loadgen

import (
	"math"
	"math/bits"
	"time"
)

// Histogram records latencies in log-linear buckets, HDR-style: values are
// kept in microseconds, exactly below 64 µs and with 32 sub-buckets per
// power of two above, so a quantile is within 1/64 (about 1.6%) of a
// recorded value whatever the number of samples. Memory grows with the
// largest value recorded (about 4 KB for values up to a second), never with
// the number of samples. Values beyond 2^33 µs (about 2.4 hours) share the
// top bucket, whose quantiles report Max, which stays exact.
//
// The zero value is an empty histogram ready to use. A Histogram is not
// safe for concurrent use.
type Histogram struct {
	counts []uint64
	n      uint64
	sum    time.Duration
	min    time.Duration
	max    time.Duration
}

const (
	subBits    = 5
	subBuckets = 1 << subBits // sub-buckets per power of two
	maxExp     = 27           // the top bucket ends at 2^(maxExp+subBits+1) µs = 2^33 µs
	numBuckets = (maxExp+1)*subBuckets + subBuckets
)

// bucketIndex maps a value in microseconds to its bucket.
func bucketIndex(us uint64) int {
	if us < 2*subBuckets {
		return int(us)
	}
	e := bits.Len64(us) - (subBits + 1)
	if e > maxExp {
		return numBuckets - 1
	}
	return e*subBuckets + int(us>>e)
}

// bucketRange returns the first value of bucket i and its width, in microseconds.
func bucketRange(i int) (lo, width uint64) {
	if i < 2*subBuckets {
		return uint64(i), 1
	}
	e := i/subBuckets - 1
	m := uint64(i - e*subBuckets)
	return m << e, 1 << e
}

// Record adds one value. Negative values are recorded as zero.
func (h *Histogram) Record(d time.Duration) {
	d = max(d, 0)
	i := bucketIndex(uint64(d / time.Microsecond))
	if i >= len(h.counts) {
		h.grow(i)
	}
	h.counts[i]++
	if h.n == 0 || d < h.min {
		h.min = d
	}
	h.max = max(h.max, d)
	h.n++
	h.sum += d
}

// grow makes room for bucket i, doubling so that a run of rising values
// costs amortised constant time.
func (h *Histogram) grow(i int) {
	n := min(max(i+1, 2*len(h.counts), 4*subBuckets), numBuckets)
	counts := make([]uint64, n)
	copy(counts, h.counts)
	h.counts = counts
}

// Merge adds every value recorded in o to h.
func (h *Histogram) Merge(o *Histogram) {
	if o.n == 0 {
		return
	}
	if len(o.counts) > len(h.counts) {
		h.grow(len(o.counts) - 1)
	}
	for i, c := range o.counts {
		h.counts[i] += c
	}
	if h.n == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.n += o.n
	h.sum += o.sum
}

// Count returns the number of values recorded.
func (h *Histogram) Count() int64 { return int64(h.n) }

// Max returns the largest value recorded, exactly; zero when empty.
func (h *Histogram) Max() time.Duration { return h.max }

// Min returns the smallest value recorded, exactly; zero when empty.
func (h *Histogram) Min() time.Duration { return h.min }

// Mean returns the exact mean of the values recorded; zero when empty.
func (h *Histogram) Mean() time.Duration {
	if h.n == 0 {
		return 0
	}
	return h.sum / time.Duration(h.n)
}

// Quantile returns the value below or at which a fraction q of the
// recorded values lie: the smallest value v such that at least ceil(q*n)
// values are <= v, to within the bucket's resolution. q is clamped to
// [0, 1]; Quantile(0) is Min and Quantile(1) is Max. Zero when empty.
func (h *Histogram) Quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	if q <= 0 || math.IsNaN(q) {
		return h.min
	}
	if q >= 1 {
		return h.max
	}
	rank := uint64(math.Ceil(q * float64(h.n)))
	rank = max(rank, 1)
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= rank {
			if i == numBuckets-1 {
				return h.max
			}
			lo, width := bucketRange(i)
			// The middle of the bucket halves the worst-case error; the
			// exact extremes are better still when the bucket holds them.
			mid := time.Duration(lo)*time.Microsecond + time.Duration(width)*time.Microsecond/2
			return min(max(mid, h.min), h.max)
		}
	}
	return h.max
}
