package limit_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/limit"
)

// Every options type reports each wrong field, not just the first, so a
// caller fixes them in one pass; and its zero value is valid.
func TestValidateReportsEveryField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		zero   error
		err    error
		fields []string // each error's field, in order
	}{
		{"AIMD", limit.AIMDOptions{}.Validate(),
			limit.AIMDOptions{Initial: -1, Min: -1, Max: -1, MaxSaturation: 2}.Validate(),
			[]string{"Initial", "Min", "Max", "MaxSaturation"}},
		{"Auto", limit.AutoOptions{}.Validate(),
			limit.AutoOptions{Initial: -1, Max: -1, CPUs: -1, Tolerance: 0.5}.Validate(),
			[]string{"Initial", "Max", "CPUs", "Tolerance"}},
		{"Gradient", limit.GradientOptions{}.Validate(),
			limit.GradientOptions{Initial: -1, MinSamples: -1, Tolerance: 0.5, Smoothing: 2}.Validate(),
			[]string{"Initial", "MinSamples", "Tolerance", "Smoothing"}},
		{"Worker", limit.WorkerOptions{}.Validate(),
			limit.WorkerOptions{Initial: -1, Max: -1, MaxSaturation: math.NaN(), Window: -1}.Validate(),
			[]string{"Initial", "Max", "MaxSaturation", "Window"}},
		{"Runtime", limit.RuntimeOptions{}.Validate(),
			limit.RuntimeOptions{SchedLatency: -1, CPUs: math.Inf(1)}.Validate(),
			[]string{"SchedLatency", "CPUs"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.zero != nil {
				t.Errorf("zero options: got %v, want valid (the defaults)", tc.zero)
			}
			var joined interface{ Unwrap() []error }
			if !errors.As(tc.err, &joined) || len(joined.Unwrap()) != len(tc.fields) {
				t.Fatalf("got %v, want %d joined errors", tc.err, len(tc.fields))
			}
			for i, e := range joined.Unwrap() {
				if want := "limit: " + tc.name + " " + tc.fields[i] + " "; !strings.HasPrefix(e.Error(), want) {
					t.Errorf("error %d: got %q, want it to begin %q", i, e, want)
				}
			}
		})
	}
}
