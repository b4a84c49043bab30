package limit_test

import (
	"errors"
	"math"
	"testing"

	"github.com/sluicehq/sluice/limit"
)

// Every options type reports each wrong field, not just the first, so a
// caller fixes them in one pass.
func TestValidateReportsEveryField(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"AIMD", limit.AIMDOptions{Initial: -1, Min: -1, Max: -1, MaxSaturation: 2}.Validate(), 4},
		{"Auto", limit.AutoOptions{Initial: -1, Max: -1, CPUs: -1, Tolerance: 0.5}.Validate(), 4},
		{"Gradient", limit.GradientOptions{Initial: -1, MinSamples: -1, Tolerance: 0.5, Smoothing: 2}.Validate(), 4},
		{"Runtime", limit.RuntimeOptions{SchedLatency: -1, CPUs: math.Inf(1)}.Validate(), 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var joined interface{ Unwrap() []error }
			if !errors.As(tc.err, &joined) {
				t.Fatalf("got %v, want %d joined errors", tc.err, tc.want)
			}
			if got := len(joined.Unwrap()); got != tc.want {
				t.Errorf("got %d errors (%v), want %d", got, tc.err, tc.want)
			}
		})
	}
}
