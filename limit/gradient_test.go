package limit_test

import (
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limit"
)

const ms = time.Millisecond

func TestGradientOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       limit.GradientOptions
		wantErr string // "" for valid
	}{
		{"zero value", limit.GradientOptions{}, ""},
		{"all set", limit.GradientOptions{Initial: 50, Min: 5, Max: 500, Tolerance: 2, MinSamples: 100, Smoothing: 1}, ""},
		{"tolerance 1", limit.GradientOptions{Tolerance: 1}, ""},
		{"negative initial", limit.GradientOptions{Initial: -1}, "Initial -1 is negative"},
		{"negative min", limit.GradientOptions{Min: -1}, "Min -1 is negative"},
		{"negative max", limit.GradientOptions{Max: -1}, "Max -1 is negative"},
		{"negative min samples", limit.GradientOptions{MinSamples: -1}, "MinSamples -1 is negative"},
		{"min above max", limit.GradientOptions{Min: 20, Max: 10}, "Min 20 is above Max 10"},
		{"tolerance below 1", limit.GradientOptions{Tolerance: 0.9}, "Tolerance 0.9 is below 1"},
		{"negative tolerance", limit.GradientOptions{Tolerance: -2}, "Tolerance -2 is below 1"},
		{"NaN tolerance", limit.GradientOptions{Tolerance: math.NaN()}, "Tolerance NaN"},
		{"infinite tolerance", limit.GradientOptions{Tolerance: math.Inf(1)}, "Tolerance +Inf"},
		{"smoothing above 1", limit.GradientOptions{Smoothing: 1.5}, "Smoothing 1.5 is outside (0, 1]"},
		{"negative smoothing", limit.GradientOptions{Smoothing: -0.5}, "Smoothing -0.5 is outside (0, 1]"},
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
			if _, err := limit.NewGradient(tt.o); err == nil {
				t.Errorf("NewGradient() accepted options Validate rejects")
			}
		})
	}
}

func TestGradientInitial(t *testing.T) {
	tests := []struct {
		name string
		o    limit.GradientOptions
		want int
	}{
		{"warm by default, not Netflix's 20", limit.GradientOptions{}, 100},
		{"the caller's last value", limit.GradientOptions{Initial: 640}, 640},
		{"clamped to Max", limit.GradientOptions{Max: 50}, 50},
		{"clamped to Min", limit.GradientOptions{Min: 200}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := limit.NewGradient(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := g.Limit(); got != tt.want {
				t.Errorf("Limit() = %d, want %d", got, tt.want)
			}
		})
	}
}

// step is one sample window fed to an Algorithm.
type step struct {
	rtt    time.Duration // every sample's RTT, or the mean with spread
	spread time.Duration // samples alternate rtt-spread, rtt+spread
	conc   int           // each sample's Inflight and the window's peak
	n      int           // samples; 0 means 20
	want   int           // the limit Tick returns
}

func (s step) feed(a limit.Algorithm) int {
	n := s.n
	if n == 0 {
		n = 20
	}
	for i := range n {
		rtt := s.rtt + s.spread
		if i%2 == 1 {
			rtt = s.rtt - s.spread
		}
		a.Observe(limit.Sample{RTT: rtt, Inflight: s.conc})
	}
	return a.Tick(limit.Window{Saturation: math.NaN(), Inflight: s.conc, PeakInflight: s.conc})
}

// Two windows that take a fresh default Gradient to a trusted baseline of
// 10ms at limit 160: the first walks down from 100 to 80, the second sees
// the RTT stay flat (so 10ms is a no-load RTT) and doubles (slow start).
var trustAt10ms = []step{
	{rtt: 10 * ms, conc: 100, want: 80},
	{rtt: 10 * ms, conc: 80, want: 160},
}

// TestGradientSteps follows the rule window by window against
// hand-computed limits (default options: Tolerance 1.5, Smoothing 0.5,
// MinSamples 10).
func TestGradientSteps(t *testing.T) {
	tests := []struct {
		name         string
		o            limit.GradientOptions
		steps        []step
		wantBaseline time.Duration
		wantTrusted  bool
	}{
		{
			name:         "warm start walks down until RTT stays flat, then slow-starts",
			steps:        trustAt10ms,
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "gradient decrease and square-root growth",
			steps: append(trustAt10ms[:2:2],
				// g = 1.5*10/30 = 0.5; L = 160 (1 - 0.5*0.5) = 120
				step{rtt: 30 * ms, conc: 160, want: 120},
				// g = 15/16; L = 120 (1 - 0.5/16) = 116.25
				step{rtt: 16 * ms, conc: 120, want: 116},
				// g = 1 and 14ms > 11.25ms (no slow start): L = 116.25 + sqrt(116.25) = 127.03
				step{rtt: 14 * ms, conc: 116, want: 127},
			),
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "gradient is clamped at 0.5",
			steps: append(trustAt10ms[:2:2],
				// g = 15/300 -> 0.5: L = 160 x 0.75
				step{rtt: 300 * ms, conc: 160, want: 120},
			),
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "Smoothing 1 jumps to the implied limit",
			o:    limit.GradientOptions{Smoothing: 1},
			steps: append(trustAt10ms[:2:2],
				// g = 15/20: L = 160 x 0.75
				step{rtt: 20 * ms, conc: 160, want: 120},
			),
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "Tolerance 2 allows twice the no-load RTT",
			o:    limit.GradientOptions{Tolerance: 2},
			steps: append(trustAt10ms[:2:2],
				// g = 2*10/20 = 1; 20ms > 10 x 1.25: L = 160 + sqrt(160) = 172.6
				step{rtt: 20 * ms, conc: 160, want: 173},
			),
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "high start: RTT follows concurrency, so the walk goes on",
			o:    limit.GradientOptions{Initial: 1000},
			steps: []step{
				{rtt: 500 * ms, conc: 1000, want: 800},
				{rtt: 400 * ms, conc: 800, want: 640},
				{rtt: 320 * ms, conc: 640, want: 512},
			},
			wantBaseline: 320 * ms, wantTrusted: false,
		},
		{
			name: "starting at Min trusts the RTT there, then slow-starts",
			o:    limit.GradientOptions{Initial: 1},
			steps: []step{
				{rtt: 10 * ms, conc: 1, want: 1},
				{rtt: 10 * ms, conc: 1, want: 2},
				{rtt: 10 * ms, conc: 2, want: 4},
			},
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "capacity loss: shrinking does not lower RTT, so the baseline rises",
			steps: append(trustAt10ms[:2:2],
				// The service becomes 4x slower: g = 0.5, L = 120.
				step{rtt: 40 * ms, conc: 160, want: 120},
				// 25% less concurrency, same RTT: not queueing. Baseline =
				// 40/1.5 = 26.67ms, g = 1, no slow start: L = 120 + sqrt(120).
				step{rtt: 40 * ms, conc: 120, want: 131},
			),
			wantBaseline: 40 * ms / 3 * 2, wantTrusted: true,
		},
		{
			name: "RTT rising while concurrency falls proves nothing",
			steps: append(trustAt10ms[:2:2],
				// 15ms = Tolerance x baseline: g = 1, L = 160 + sqrt(160) = 172.6
				step{rtt: 15 * ms, conc: 160, want: 173},
				// The service slowed between the windows: no baseline change;
				// g = 0.5: L = 172.6 x 0.75 = 129.5
				step{rtt: 40 * ms, conc: 140, want: 129},
			),
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "app-limited windows hold: no growth into an unused limit, no shrink",
			steps: append(trustAt10ms[:2:2],
				step{rtt: 10 * ms, conc: 79, want: 160},
				step{rtt: 50 * ms, conc: 79, want: 160},
				// Half used is not app-limited: g = 0.5, L = 120.
				step{rtt: 50 * ms, conc: 80, want: 120},
			),
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "fewer than MinSamples hold, and the samples carry over",
			steps: []step{
				{rtt: 10 * ms, conc: 100, n: 5, want: 100},
				{rtt: 10 * ms, conc: 100, n: 5, want: 80},
			},
			wantBaseline: 10 * ms, wantTrusted: false,
		},
		{
			name: "MinSamples option",
			o:    limit.GradientOptions{MinSamples: 50},
			steps: []step{
				{rtt: 10 * ms, conc: 100, n: 49, want: 100},
				{rtt: 10 * ms, conc: 100, n: 1, want: 80},
			},
			wantBaseline: 10 * ms, wantTrusted: false,
		},
		{
			name: "a noisy mean holds until enough samples pin it down",
			steps: []step{
				// CV 0.5: relative standard error 0.5/sqrt(100) = 5% > 3%.
				{rtt: 10 * ms, spread: 5 * ms, conc: 100, n: 100, want: 100},
				// 300 samples: 0.5/sqrt(300) = 2.9%.
				{rtt: 10 * ms, spread: 5 * ms, conc: 100, n: 200, want: 80},
			},
			wantBaseline: 10 * ms, wantTrusted: false,
		},
		{
			name: "clamped to Max",
			o:    limit.GradientOptions{Max: 150},
			steps: []step{
				{rtt: 10 * ms, conc: 100, want: 80},
				{rtt: 10 * ms, conc: 80, want: 150},
			},
			wantBaseline: 10 * ms, wantTrusted: true,
		},
		{
			name: "clamped to Min",
			o:    limit.GradientOptions{Min: 90},
			steps: []step{
				{rtt: 10 * ms, conc: 100, want: 90},
			},
			wantBaseline: 10 * ms, wantTrusted: false,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := limit.NewGradient(tt.o)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range tt.steps {
				if got := s.feed(g); got != s.want {
					t.Fatalf("window %d (rtt %v, conc %d): got limit %d, want %d", i, s.rtt, s.conc, got, s.want)
				}
			}
			b, trusted := g.Baseline()
			if d := b - tt.wantBaseline; d < -time.Microsecond || d > time.Microsecond || trusted != tt.wantTrusted {
				t.Errorf("Baseline() = %v, %v; want %v, %v", b, trusted, tt.wantBaseline, tt.wantTrusted)
			}
		})
	}
}

// TestGradientDrops checks that drops cut the limit at once, once per
// window however many there are, and that the window then holds.
func TestGradientDrops(t *testing.T) {
	g, err := limit.NewGradient(limit.GradientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		g.Observe(limit.Sample{RTT: 10 * ms, Inflight: 100})
		if i%2 == 0 {
			if got := g.Observe(limit.Sample{RTT: time.Second, Inflight: 100, Dropped: true}); got != 90 {
				t.Fatalf("drop %d: Observe returned %d, want 90 (once per window)", i/2, got)
			}
		}
	}
	if got := g.Tick(limit.Window{Inflight: 100, PeakInflight: 100}); got != 90 {
		t.Errorf("Tick after a window with drops: got %d, want 90 (hold)", got)
	}
	// The next window with drops cuts again: 81.
	if got := g.Observe(limit.Sample{Dropped: true, Inflight: 90}); got != 81 {
		t.Errorf("first drop of the next window: got %d, want 81", got)
	}
}

// TestGradientDropsAreNotRTTs checks that a dropped sample's RTT (the
// timeout) does not enter the mean: 20 samples of 10ms and one dropped at
// 10s leave the baseline at 10ms.
func TestGradientDropsAreNotRTTs(t *testing.T) {
	g, err := limit.NewGradient(limit.GradientOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Observe(limit.Sample{RTT: 10 * time.Second, Inflight: 100, Dropped: true})
	g.Tick(limit.Window{Inflight: 100, PeakInflight: 100})
	step{rtt: 10 * ms, conc: 90, want: 72}.feed(g)
	if b, _ := g.Baseline(); b != 10*ms {
		t.Errorf("Baseline() = %v, want 10ms", b)
	}
}

// TestGradientObserveConcurrent feeds one window from many goroutines while
// Limit is read: with MinSamples equal to the number of samples, Tick acts
// only if none was lost.
func TestGradientObserveConcurrent(t *testing.T) {
	const goroutines, each = 8, 500
	for _, tc := range []struct {
		minSamples int
		want       int
	}{
		{goroutines * each, 80},
		{goroutines*each + 1, 100},
	} {
		g, err := limit.NewGradient(limit.GradientOptions{MinSamples: tc.minSamples})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range goroutines {
			wg.Go(func() {
				for range each {
					g.Observe(limit.Sample{RTT: 10 * ms, Inflight: 100})
					_ = g.Limit()
				}
			})
		}
		wg.Wait()
		if got := g.Tick(limit.Window{Inflight: 100, PeakInflight: 100}); got != tc.want {
			t.Errorf("MinSamples %d, %d samples: got %d, want %d", tc.minSamples, goroutines*each, got, tc.want)
		}
	}
}

// TestGradientNeedsInflight checks that samples without in-flight counts
// are never taken as evidence: RTT rising window after window must not
// raise the baseline.
func TestGradientNeedsInflight(t *testing.T) {
	g := newGradient(t, limit.GradientOptions{Initial: 1000})
	for i := range 20 {
		for range 20 {
			g.Observe(limit.Sample{RTT: time.Duration(i+1) * 10 * ms})
		}
		g.Tick(limit.Window{Inflight: 1000, PeakInflight: 1000})
	}
	if b, trusted := g.Baseline(); b != 10*ms || trusted {
		t.Errorf("Baseline() = %v, %v; want 10ms, false", b, trusted)
	}
}
