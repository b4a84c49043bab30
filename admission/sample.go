package admission

import "time"

// A Controller times every request while they are few, and one in 2^shift
// once they are many: two clock reads (one in Acquire, one in Done) and
// the sample's atomics cost more than the rest of the fast path, and a
// limit algorithm needs a few hundred samples a window, not millions. The
// window loop sets the shift from the timed Permits given back in its last
// probe interval (counted by the requests they stand for: an estimate of
// the timed requests), so that a window still holds at least
// minWindowSamples samples. Each sample carries the number of requests it
// stands for (limit.Sample.Weight), so that rates and histogram counts
// stay estimates of every request; RTT statistics are taken over the
// samples.
const (
	// minWindowSamples is the fewest samples a sample window should get
	// at the shift the loop sets: below twice that many timed completions
	// a window, every request is timed.
	minWindowSamples = 1024
	// maxSampleShift bounds the shift: one request in 1024 at most, which
	// takes more than ten million a second at a 100 ms window.
	maxSampleShift = 10

	// seqBits is the width of the state word's sequence field.
	seqBits = 64 - seqShift
	seqMask = 1<<seqBits - 1
	// seqMix is odd, so that multiplying by it permutes the sequence
	// numbers: about 2^seqBits over the golden ratio, so that consecutive
	// numbers land far apart (Fibonacci hashing).
	seqMix = 20251
)

// sampled reports whether the request numbered seq is timed at shift:
// exactly one number in 2^shift of every 2^seqBits consecutive ones. The
// numbers are permuted first, so that a load with a period (every eighth
// request a heavy one) is not sampled in step with it.
func sampled(seq uint64, shift uint32) bool {
	return (seq*seqMix&seqMask)>>(seqBits-shift) == 0
}

// shiftFor is the sampling shift for perWindow timed completions a sample
// window: the highest that leaves at least minWindowSamples samples.
func shiftFor(perWindow float64) uint32 {
	var s uint32
	for s < maxSampleShift && perWindow >= float64(uint64(minWindowSamples)<<(s+1)) {
		s++
	}
	return s
}

// pace sets the sampling shift from the timed Permits given back, by the
// requests they stand for, in the el since the last call.
func (c *Controller) pace(timed uint64, el time.Duration) {
	if el <= 0 {
		return
	}
	if s := min(shiftFor(float64(timed)*float64(c.window)/float64(el)), c.maxShift); s != c.shift.Load() {
		c.shift.Store(s)
	}
}
