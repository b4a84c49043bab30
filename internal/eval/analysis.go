package eval

import (
	"math"
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// MovingGoodput returns, for each point of series, the mean goodput over
// the window of length window that starts at that point (fewer points at
// the end of the series). A single 250 ms bucket is too noisy to judge
// recovery by; a one-second mean is not.
func MovingGoodput(series []loadgen.Point, bucket, window time.Duration) []float64 {
	n := max(1, int(window/bucket))
	out := make([]float64, len(series))
	for i := range series {
		var sum float64
		k := 0
		for j := i; j < len(series) && j < i+n; j++ {
			sum += series[j].Goodput
			k++
		}
		out[i] = sum / float64(k)
	}
	return out
}

// Recovery is when goodput came back after a disturbance.
type Recovery struct {
	// After is the time from the disturbance until goodput was back: the
	// first point from which the one-second mean goodput stays at or above
	// Threshold for Hold. Meaningful only when Recovered.
	After     time.Duration `json:"after_ns"`
	Recovered bool          `json:"recovered"`
	// Threshold is the goodput (requests per second) that counts as back.
	Threshold float64 `json:"threshold_rps"`
	Hold      time.Duration
}

// FindRecovery looks in series (points of width bucket) for the first
// point at or after from, and before end, from which the one-second moving
// mean of goodput stays at or above threshold for hold (every window that
// starts within [t, t+hold] must hold). Recovery is not found when no such
// point leaves room for hold and its window before end.
func FindRecovery(series []loadgen.Point, bucket, from, end time.Duration, threshold float64, hold time.Duration) Recovery {
	const window = time.Second
	r := Recovery{Threshold: threshold, Hold: hold}
	m := MovingGoodput(series, bucket, window)
	startOf := func(i int) time.Duration { return series[i].Start }
	for i := range series {
		t := startOf(i)
		if t < from {
			continue
		}
		if t+hold+window > end {
			break
		}
		ok := true
		for j := i; j < len(series) && startOf(j) <= t+hold; j++ {
			if m[j] < threshold {
				ok = false
				break
			}
		}
		if ok {
			r.After, r.Recovered = t-from, true
			return r
		}
	}
	return r
}

// Wasted returns the renders that served no one: the renders the pool did
// minus the successes the clients accepted, never below zero (a success
// not rendered by the pool, such as nginx answering /ping, is no render).
func Wasted(rendered, successes int64) int64 { return max(0, rendered-successes) }

// Median returns the median of xs, NaN when empty; xs is not modified.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MergeSeries adds the time series of runs that ran at the same time
// against the same target (one run per query string, say), point by point.
// Rates add; latency percentiles of the sum are not known, so a point's
// P50 and P99 are the highest of the runs' (an upper bound). The result is
// as long as the longest series.
func MergeSeries(runs ...[]loadgen.Point) []loadgen.Point {
	var out []loadgen.Point
	for _, s := range runs {
		for i, p := range s {
			if i == len(out) {
				out = append(out, loadgen.Point{Start: p.Start})
			}
			o := &out[i]
			o.Offered += p.Offered
			o.Attempts += p.Attempts
			o.Goodput += p.Goodput
			o.Errors += p.Errors
			o.P50 = max(o.P50, p.P50)
			o.P99 = max(o.P99, p.P99)
		}
	}
	return out
}
