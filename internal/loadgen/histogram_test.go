package loadgen_test

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// exactQuantile is the reference: the smallest sample with at least
// ceil(q*n) samples at or below it.
func exactQuantile(sorted []time.Duration, q float64) time.Duration {
	rank := max(int(math.Ceil(q*float64(len(sorted)))), 1)
	return sorted[rank-1]
}

func TestHistogramQuantilesAgainstKnownData(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name    string
		samples func() []time.Duration
	}{
		{"uniform 1µs..10ms", func() []time.Duration {
			s := make([]time.Duration, 10000)
			for i := range s {
				s[i] = time.Duration(i+1) * time.Microsecond
			}
			return s
		}},
		{"exponential mean 20ms", func() []time.Duration {
			s := make([]time.Duration, 50000)
			for i := range s {
				s[i] = time.Duration(rnd.ExpFloat64() * float64(20*time.Millisecond))
			}
			return s
		}},
		{"bimodal 2ms and 900ms", func() []time.Duration {
			s := make([]time.Duration, 0, 1000)
			for i := range 1000 {
				if i%10 == 0 {
					s = append(s, 900*time.Millisecond+time.Duration(i)*time.Microsecond)
				} else {
					s = append(s, 2*time.Millisecond+time.Duration(i)*time.Nanosecond)
				}
			}
			return s
		}},
		{"a few small values", func() []time.Duration {
			return []time.Duration{3 * time.Microsecond, 7 * time.Microsecond, 12 * time.Microsecond}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			samples := tt.samples()
			var h loadgen.Histogram
			for _, s := range samples {
				h.Record(s)
			}
			slices.Sort(samples)
			for _, q := range []float64{0.01, 0.25, 0.5, 0.9, 0.99, 0.999} {
				want := exactQuantile(samples, q)
				got := h.Quantile(q)
				// Half a bucket (1/64 of the value) plus the microsecond
				// the buckets are counted in.
				tol := time.Duration(float64(want)/64) + time.Microsecond
				if d := got - want; d < -tol || d > tol {
					t.Errorf("Quantile(%v) = %v, want %v ± %v", q, got, want, tol)
				}
			}
			if got, want := h.Count(), int64(len(samples)); got != want {
				t.Errorf("Count() = %d, want %d", got, want)
			}
			if got, want := h.Max(), samples[len(samples)-1]; got != want {
				t.Errorf("Max() = %v, want %v", got, want)
			}
			if got, want := h.Min(), samples[0]; got != want {
				t.Errorf("Min() = %v, want %v", got, want)
			}
			if got, want := h.Quantile(1), samples[len(samples)-1]; got != want {
				t.Errorf("Quantile(1) = %v, want %v", got, want)
			}
		})
	}
}

func TestHistogramEdges(t *testing.T) {
	var h loadgen.Histogram
	if got := h.Quantile(0.5); got != 0 {
		t.Errorf("empty Quantile(0.5) = %v, want 0", got)
	}
	if got := h.Mean(); got != 0 {
		t.Errorf("empty Mean() = %v, want 0", got)
	}
	h.Record(-time.Second)  // clock steps must not corrupt the histogram
	h.Record(3 * time.Hour) // beyond the top bucket: Max stays exact
	if got, want := h.Min(), time.Duration(0); got != want {
		t.Errorf("Min() = %v, want %v", got, want)
	}
	if got, want := h.Max(), 3*time.Hour; got != want {
		t.Errorf("Max() = %v, want %v", got, want)
	}
	if got, want := h.Quantile(0.99), 3*time.Hour; got != want {
		t.Errorf("Quantile(0.99) = %v, want %v (clamped to Max)", got, want)
	}
	if got, want := h.Mean(), 90*time.Minute; got != want {
		t.Errorf("Mean() = %v, want %v", got, want)
	}
}

func TestHistogramMerge(t *testing.T) {
	var a, b, all loadgen.Histogram
	for i := range 2000 {
		d := time.Duration(i*i) * time.Microsecond
		all.Record(d)
		if i%3 == 0 {
			a.Record(d)
		} else {
			b.Record(d)
		}
	}
	var empty loadgen.Histogram
	a.Merge(&empty)
	empty.Merge(&a)
	empty.Merge(&b)
	for _, q := range []float64{0, 0.5, 0.9, 0.99, 1} {
		if got, want := empty.Quantile(q), all.Quantile(q); got != want {
			t.Errorf("merged Quantile(%v) = %v, want %v", q, got, want)
		}
	}
	if got, want := empty.Count(), all.Count(); got != want {
		t.Errorf("merged Count() = %d, want %d", got, want)
	}
	if got, want := empty.Mean(), all.Mean(); got != want {
		t.Errorf("merged Mean() = %v, want %v", got, want)
	}
}

// sortedSamples is the naive reference the histogram replaces: exact, but
// its memory grows with every request.
type sortedSamples []time.Duration

func (s *sortedSamples) Record(d time.Duration) { *s = append(*s, d) }

func BenchmarkRecord(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	values := make([]time.Duration, 4096)
	for i := range values {
		values[i] = time.Duration(rnd.ExpFloat64() * float64(20*time.Millisecond))
	}
	b.Run("histogram", func(b *testing.B) {
		b.ReportAllocs()
		var h loadgen.Histogram
		i := 0
		for b.Loop() {
			h.Record(values[i&4095])
			i++
		}
	})
	b.Run("sorted-samples", func(b *testing.B) {
		b.ReportAllocs()
		var s sortedSamples
		i := 0
		for b.Loop() {
			s.Record(values[i&4095])
			i++
		}
	})
}

func BenchmarkQuantile(b *testing.B) {
	rnd := rand.New(rand.NewPCG(1, 2))
	var h loadgen.Histogram
	samples := make([]time.Duration, 100000)
	for i := range samples {
		samples[i] = time.Duration(rnd.ExpFloat64() * float64(20*time.Millisecond))
		h.Record(samples[i])
	}
	b.Run("histogram", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.Quantile(0.99)
		}
	})
	b.Run("sorted-samples", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]time.Duration, len(samples))
		for b.Loop() {
			copy(buf, samples)
			slices.Sort(buf)
			exactQuantile(buf, 0.99)
		}
	})
}
