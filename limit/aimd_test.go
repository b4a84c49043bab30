package limit_test

import (
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/limit"
)

func TestAIMDOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       limit.AIMDOptions
		wantErr string // "" for valid
	}{
		{"zero value", limit.AIMDOptions{}, ""},
		{"all set", limit.AIMDOptions{Initial: 50, Min: 10, Max: 100, MaxSaturation: 0.9}, ""},
		{"saturation 1", limit.AIMDOptions{MaxSaturation: 1}, ""},
		{"negative initial", limit.AIMDOptions{Initial: -1}, "Initial -1 is negative"},
		{"negative min", limit.AIMDOptions{Min: -1}, "Min -1 is negative"},
		{"negative max", limit.AIMDOptions{Max: -1}, "Max -1 is negative"},
		{"min above max", limit.AIMDOptions{Min: 20, Max: 10}, "Min 20 is above Max 10"},
		{"min above default max", limit.AIMDOptions{Min: 2000}, "Min 2000 is above Max 1000"},
		{"saturation above 1", limit.AIMDOptions{MaxSaturation: 1.5}, "MaxSaturation 1.5 is outside [0, 1]"},
		{"negative saturation", limit.AIMDOptions{MaxSaturation: -0.1}, "outside [0, 1]"},
		{"NaN saturation", limit.AIMDOptions{MaxSaturation: math.NaN()}, "outside [0, 1]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "limit: ") {
				t.Errorf("Validate() = %v, want an error containing %q", err, tt.wantErr)
			}
			if _, err := limit.NewAIMD(tt.o); err == nil {
				t.Errorf("NewAIMD() accepted options Validate rejects")
			}
		})
	}
}

func TestAIMDInitial(t *testing.T) {
	tests := []struct {
		name string
		o    limit.AIMDOptions
		want int
	}{
		{"zero value starts wide open at the default Max", limit.AIMDOptions{}, 1000},
		{"Initial 0 means Max", limit.AIMDOptions{Max: 100}, 100},
		{"explicit Initial", limit.AIMDOptions{Initial: 30}, 30},
		{"Initial above Max is clamped (hard ceiling through Max)", limit.AIMDOptions{Initial: 1000, Max: 100}, 100},
		{"Initial below Min is clamped", limit.AIMDOptions{Initial: 2, Min: 5}, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := limit.NewAIMD(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Limit(); got != tt.want {
				t.Errorf("Limit() = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestAIMDTick checks the AIMD rule against hand-computed values.
func TestAIMDTick(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name       string
		o          limit.AIMDOptions
		saturation float64
		inflight   int
		peak       int
		want       int
	}{
		// Decrease: saturated and the limit at least half used.
		{"saturated, inflight 600 of 1000", limit.AIMDOptions{}, 0.97, 600, 0, 900},
		{"saturated exactly at the maximum", limit.AIMDOptions{}, 0.95, 600, 0, 900},
		{"saturated, inflight exactly half", limit.AIMDOptions{}, 1, 500, 0, 900},
		{"saturated, peak counts when above inflight", limit.AIMDOptions{}, 1, 10, 600, 900},
		{"floor of 0.9 L", limit.AIMDOptions{Initial: 15}, 1, 15, 0, 13},                 // floor(13.5)
		{"floor to Min", limit.AIMDOptions{Initial: 1}, 1, 1, 0, 1},                      // floor(0.9) = 0 -> Min 1
		{"floor to a higher Min", limit.AIMDOptions{Initial: 10, Min: 10}, 1, 10, 0, 10}, // 9 -> Min 10
		{"custom MaxSaturation", limit.AIMDOptions{Initial: 100, MaxSaturation: 0.5}, 0.6, 100, 0, 90},

		// Increase: otherwise, by max(1, ceil(sqrt(L))), capped at Max.
		{"saturated but inflight 400 of 1000: grows to the cap", limit.AIMDOptions{}, 1, 400, 0, 1000},
		{"saturated but inflight below half", limit.AIMDOptions{Initial: 100}, 1, 49, 0, 110},
		{"unsaturated, L 100", limit.AIMDOptions{Initial: 100}, 0.5, 100, 0, 110},
		{"just below the maximum", limit.AIMDOptions{Initial: 100}, 0.9499, 100, 0, 110},
		{"unsaturated, L 1", limit.AIMDOptions{Initial: 1}, 0, 1, 0, 2},
		{"unsaturated, L 2", limit.AIMDOptions{Initial: 2}, 0, 2, 0, 4},         // ceil(1.41) = 2
		{"unsaturated, L 101", limit.AIMDOptions{Initial: 101}, 0, 101, 0, 112}, // ceil(10.05) = 11
		{"capped at Max", limit.AIMDOptions{Initial: 95, Max: 100}, 0, 95, 0, 100},
		{"NaN saturation is unknown: grows", limit.AIMDOptions{Initial: 100}, nan, 100, 100, 110},
		{"custom MaxSaturation not reached", limit.AIMDOptions{Initial: 100, MaxSaturation: 0.5}, 0.4, 100, 0, 110},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := limit.NewAIMD(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			before := a.Limit()
			got := a.Tick(limit.Window{Saturation: tt.saturation, Inflight: tt.inflight, PeakInflight: tt.peak})
			if got != tt.want {
				t.Errorf("Tick from %d = %d, want %d", before, got, tt.want)
			}
			if l := a.Limit(); l != got {
				t.Errorf("Limit() = %d after Tick returned %d", l, got)
			}
		})
	}
}

// TestAIMDSequence follows the limit over several windows: a saturated
// process backs off 10% a window, then recovers by square-root steps.
func TestAIMDSequence(t *testing.T) {
	a, err := limit.NewAIMD(limit.AIMDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []int{900, 810, 729, 656} // floor(0.9 L) from 1000
	for i, w := range want {
		if got := a.Tick(limit.Window{Saturation: 1, Inflight: a.Limit()}); got != w {
			t.Fatalf("saturated window %d: got %d, want %d", i, got, w)
		}
	}
	want = []int{682, 709, 736, 764} // + ceil(sqrt(L)): 26, 27, 27, 28
	for i, w := range want {
		if got := a.Tick(limit.Window{Saturation: 0.3, Inflight: a.Limit()}); got != w {
			t.Fatalf("recovery window %d: got %d, want %d", i, got, w)
		}
	}
}

func TestAIMDObserveDoesNotMoveTheLimit(t *testing.T) {
	a, err := limit.NewAIMD(limit.AIMDOptions{Initial: 100})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []limit.Sample{{RTT: 1e9, Inflight: 100}, {Dropped: true, Inflight: 100}} {
		if got := a.Observe(s); got != 100 {
			t.Errorf("Observe(%+v) = %d, want 100", s, got)
		}
	}
}

// TestAIMDConcurrent runs Observe from many goroutines while Tick runs; with
// -race it checks the synchronisation, and the final limit shows that no
// Tick was lost.
func TestAIMDConcurrent(t *testing.T) {
	a, err := limit.NewAIMD(limit.AIMDOptions{Initial: 1, Max: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 1000 {
				if l := a.Observe(limit.Sample{RTT: 1000}); l < 1 {
					t.Errorf("Observe returned %d", l)
					return
				}
			}
		})
	}
	want := 1
	for range 100 {
		want += max(1, int(math.Ceil(math.Sqrt(float64(want)))))
		a.Tick(limit.Window{Saturation: 0})
	}
	wg.Wait()
	if got := a.Limit(); got != want {
		t.Errorf("after 100 unsaturated windows from 1: got %d, want %d", got, want)
	}
}
