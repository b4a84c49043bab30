package limit_test

import (
	"testing"

	"github.com/sluicehq/sluice/limit"
)

func TestFixed(t *testing.T) {
	tests := []struct {
		name string
		n    int
		want int
	}{
		{"positive", 8, 8},
		{"one", 1, 1},
		{"zero is clamped to 1", 0, 1},
		{"negative is clamped to 1", -5, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := limit.NewFixed(tt.n)
			if got := f.Limit(); got != tt.want {
				t.Errorf("Limit() = %d, want %d", got, tt.want)
			}
			if got := f.Observe(limit.Sample{RTT: 1e9, Dropped: true, Inflight: 1000}); got != tt.want {
				t.Errorf("Observe() = %d, want %d", got, tt.want)
			}
			if got := f.Tick(limit.Window{Saturation: 1, Inflight: 1000, PeakInflight: 1000}); got != tt.want {
				t.Errorf("Tick() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestFixedSet(t *testing.T) {
	f := limit.NewFixed(4)
	f.Set(16)
	if got := f.Limit(); got != 16 {
		t.Errorf("after Set(16): Limit() = %d, want 16", got)
	}
	f.Set(0)
	if got := f.Limit(); got != 1 {
		t.Errorf("after Set(0): Limit() = %d, want 1", got)
	}
}

func TestFixedZeroValue(t *testing.T) {
	var f limit.Fixed
	if got := f.Limit(); got != 1 {
		t.Errorf("zero Fixed: Limit() = %d, want 1", got)
	}
}
