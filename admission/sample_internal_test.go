package admission

import "testing"

// Over every 2^seqBits consecutive sequence numbers, from any start, the
// share sampled is exactly one in 2^shift; shift 0 samples every one.
func TestSampledShare(t *testing.T) {
	for shift := uint32(0); shift <= maxSampleShift; shift++ {
		for _, from := range []uint64{0, 12345, 1<<seqBits - 1} {
			n := 0
			for seq := from; seq < from+1<<seqBits; seq++ {
				if sampled(seq, shift) {
					n++
				}
			}
			if want := 1 << (seqBits - shift); n != want {
				t.Errorf("shift %d from %d: %d of %d sampled, want %d", shift, from, n, 1<<seqBits, want)
			}
		}
	}
}

// A load with a period, every p-th request a heavy one, is not sampled in
// step with it: the heavy requests are about one in p of the samples, as
// of the requests. Taking every 2^shift-th number would take only heavy
// ones when p is 2^shift.
func TestSampledNotInStep(t *testing.T) {
	for _, shift := range []uint32{1, 3, 5, 8} {
		for _, p := range []uint64{2, 3, 4, 8, 16, 1 << shift} {
			heavy, all := 0, 0
			for seq := range uint64(1 << seqBits) {
				if sampled(seq, shift) {
					all++
					if seq%p == 0 {
						heavy++
					}
				}
			}
			if all < 16*int(p) {
				continue // too few heavy ones expected among the samples to tell
			}
			if share := float64(heavy) * float64(p) / float64(all); share < 0.75 || share > 1.25 {
				t.Errorf("shift %d, every %d-th heavy: heavy %d of %d samples, %.2f times their share of requests", shift, p, heavy, all, share)
			}
		}
	}
}

// Every request is timed below 2 x minWindowSamples timed completions a
// window; above, one in 2^shift, leaving at least minWindowSamples a
// window, up to maxSampleShift.
func TestShiftFor(t *testing.T) {
	for _, tc := range []struct {
		perWindow float64
		want      uint32
	}{
		{0, 0}, {40, 0}, {2*minWindowSamples - 1, 0}, {2 * minWindowSamples, 1},
		{4*minWindowSamples - 1, 1}, {4 * minWindowSamples, 2}, {1e6, 9}, {1e9, maxSampleShift},
	} {
		if got := shiftFor(tc.perWindow); got != tc.want {
			t.Errorf("shiftFor(%v) = %d, want %d", tc.perWindow, got, tc.want)
		}
		if s := shiftFor(tc.perWindow); s > 0 && tc.perWindow/float64(uint64(1)<<s) < minWindowSamples {
			t.Errorf("shiftFor(%v) = %d leaves %v samples a window", tc.perWindow, s, tc.perWindow/float64(uint64(1)<<s))
		}
	}
}
