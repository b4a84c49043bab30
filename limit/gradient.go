package limit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// GradientOptions configures a Gradient limit. The zero value is usable: it
// starts at 100, stays in [1, 1000] and tolerates 50% of queueing above the
// no-load RTT.
type GradientOptions struct {
	// Initial is the starting limit; 0 means 100. Pass the previous
	// process's last limit to start warmer still. Clamped into [Min, Max].
	Initial int
	// Min is the lowest limit; 0 means 1.
	Min int
	// Max is the highest limit; 0 means 1000.
	Max int
	// Tolerance is how much slower than the no-load RTT the service may get
	// before the limit shrinks, as a ratio >= 1; 0 means 1.5. The limit
	// settles where RTT = Tolerance x no-load RTT: for a CPU-bound service
	// with c cores, at about Tolerance x c.
	Tolerance float64
	// MinSamples is the fewest samples (timed completions, whatever their
	// Weight) a window needs for its RTT to be trusted; a window with
	// fewer holds the limit. 0 means 10.
	MinSamples int
	// Smoothing is the share of the gradient's correction applied in one
	// window, in (0, 1]; 0 means 0.5. 1 jumps straight to the limit the
	// last window's RTT implies; lower values damp noise.
	Smoothing float64
}

// Validate reports every invalid field, one error each (errors.Join):
// a negative number, Min above Max, Tolerance in (0, 1), or Smoothing above 1.
func (o GradientOptions) Validate() error {
	var errs []error
	if o.Initial < 0 {
		errs = append(errs, fmt.Errorf("limit: Gradient Initial %d is negative", o.Initial))
	}
	if o.Min < 0 {
		errs = append(errs, fmt.Errorf("limit: Gradient Min %d is negative", o.Min))
	}
	if o.Max < 0 {
		errs = append(errs, fmt.Errorf("limit: Gradient Max %d is negative", o.Max))
	}
	if o.MinSamples < 0 {
		errs = append(errs, fmt.Errorf("limit: Gradient MinSamples %d is negative", o.MinSamples))
	}
	if !(o.Tolerance == 0 || o.Tolerance >= 1) || math.IsInf(o.Tolerance, 0) {
		errs = append(errs, fmt.Errorf("limit: Gradient Tolerance %v is below 1", o.Tolerance))
	}
	if !(o.Smoothing >= 0 && o.Smoothing <= 1) {
		errs = append(errs, fmt.Errorf("limit: Gradient Smoothing %v is outside (0, 1]", o.Smoothing))
	}
	if d := o.withDefaults(); d.Min > d.Max {
		errs = append(errs, fmt.Errorf("limit: Gradient Min %d is above Max %d", d.Min, d.Max))
	}
	return errors.Join(errs...)
}

func (o GradientOptions) withDefaults() GradientOptions {
	if o.Min == 0 {
		o.Min = 1
	}
	if o.Max == 0 {
		o.Max = 1000
	}
	if o.Initial == 0 {
		o.Initial = 100
	}
	o.Initial = min(max(o.Initial, o.Min), o.Max)
	if o.Tolerance == 0 {
		o.Tolerance = 1.5
	}
	if o.MinSamples == 0 {
		o.MinSamples = 10
	}
	if o.Smoothing == 0 {
		o.Smoothing = 0.5
	}
	return o
}

// Constants of the Gradient rule; the package documentation explains them.
const (
	// dropBackoff is the multiplicative decrease for a window with drops.
	dropBackoff = 0.9
	// probeBackoff is the per-decision decrease while the no-load RTT is
	// not yet known: a walk down, never a pin (Envoy #8337).
	probeBackoff = 0.8
	// minGradient bounds one decision's decrease (Netflix and Envoy use 0.5).
	minGradient = 0.5
	// maxRSE is the relative standard error an epoch's mean RTT must reach
	// before it is acted on.
	maxRSE = 0.03
	// maxEpochTicks is how many windows an epoch may accumulate before it
	// is restarted even though it never became precise: older samples
	// describe a service that may have changed.
	maxEpochTicks = 60
	// evidenceStep is the change of concurrency between two epochs (a
	// ratio) from which on RTT's response to it is judged.
	evidenceStep = 0.9
	// evidenceZ is how many standard errors must separate "RTT flat" from
	// "RTT follows concurrency" before a pair of epochs is judged.
	evidenceZ = 3
)

// Gradient is an RTT-gradient limit in the spirit of Netflix's Gradient2
// and Envoy's adaptive concurrency filter, without their known defects. It
// keeps a baseline (the no-load RTT) and compares the mean RTT since the
// limit last changed (short) with it:
//
//	g = clamp(Tolerance x baseline / short, 0.5, 1)
//	g < 1: L = L x (1 - Smoothing x (1 - g))
//	g = 1: L = 2L while short <= baseline x (1 + (Tolerance-1)/4) (slow start),
//	       else L + max(1, sqrt(L))
//
// A decision waits until the samples since the limit last changed (an
// epoch, one or more windows) number at least MinSamples and pin the mean
// RTT down to 3%. A dropped sample cuts L to 0.9 L at once, once per
// window. A window whose peak in-flight count is below L/2 (the
// application does not use its limit) holds L. The package documentation
// gives the reasoning and how the baseline is learnt.
//
// Create one with NewGradient; the zero value is not usable. A Gradient is
// safe for concurrent use: Observe takes a mutex for a few additions, Limit
// is one atomic load.
type Gradient struct {
	o     GradientOptions
	limit atomic.Int64 // published copy of mu.limit, rounded

	mu struct {
		sync.Mutex
		limit float64

		// tick accumulates the current window (Observe); epoch, the
		// windows since the limit last changed (Tick).
		tick    accumulator
		epoch   accumulator
		ticks   int // windows in epoch
		dropped bool

		// baseline is the no-load RTT estimate in nanoseconds; 0 until the
		// first precise epoch.
		baseline float64
		// trusted reports that some pair of epochs showed RTT not
		// following concurrency, so the baseline is a no-load RTT and not
		// just the least loaded RTT seen so far.
		trusted bool
		// ref is the epoch the current one is compared with to tell
		// queueing (RTT follows concurrency) from a slower service.
		ref    epochStat
		hasRef bool
	}
}

// accumulator sums completed, undropped samples.
type accumulator struct {
	n           int
	sumRTT      float64 // nanoseconds
	sumRTT2     float64 // squares, for the standard error
	sumInflight float64
	maxInflight int
}

func (a *accumulator) add(b accumulator) {
	a.n += b.n
	a.sumRTT += b.sumRTT
	a.sumRTT2 += b.sumRTT2
	a.sumInflight += b.sumInflight
	a.maxInflight = max(a.maxInflight, b.maxInflight)
}

// epochStat is what an epoch says about the service.
type epochStat struct {
	rtt  float64 // mean RTT in nanoseconds
	rse  float64 // relative standard error of rtt
	conc float64 // mean in-flight count at completion
}

func (a *accumulator) stat() epochStat {
	if a.n == 0 {
		return epochStat{}
	}
	n := float64(a.n)
	mean := a.sumRTT / n
	st := epochStat{rtt: mean, conc: a.sumInflight / n}
	if mean > 0 {
		variance := max(a.sumRTT2/n-mean*mean, 0)
		st.rse = math.Sqrt(variance/n) / mean
	}
	return st
}

var _ Algorithm = (*Gradient)(nil)

// NewGradient returns a Gradient limit at o.Initial, or o.Validate's error.
func NewGradient(o GradientOptions) (*Gradient, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	g := &Gradient{o: o.withDefaults()}
	g.mu.limit = float64(g.o.Initial)
	g.limit.Store(int64(g.o.Initial))
	return g, nil
}

// Limit returns the current limit.
func (g *Gradient) Limit() int { return int(g.limit.Load()) }

// Observe records a completed request. The first dropped sample of a window
// cuts the limit to 0.9 of itself at once; later ones in the same window do
// nothing more, so a burst of timeouts is one congestion signal, not many.
// A dropped sample's RTT is not used: it measures the timeout, not the
// service.
func (g *Gradient) Observe(s Sample) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s.Dropped {
		if !g.mu.dropped {
			g.mu.dropped = true
			g.setLocked(g.mu.limit * dropBackoff)
		}
		return g.Limit()
	}
	rtt := float64(max(s.RTT, 0))
	t := &g.mu.tick
	t.n++
	t.sumRTT += rtt
	t.sumRTT2 += rtt * rtt
	t.sumInflight += float64(s.Inflight)
	t.maxInflight = max(t.maxInflight, s.Inflight)
	return g.Limit()
}

// Tick closes the window: it adds the window's samples to the epoch, and
// once the epoch is precise applies the rule. It returns the new limit.
func (g *Gradient) Tick(w Window) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	tick, dropped := g.mu.tick, g.mu.dropped
	g.mu.tick, g.mu.dropped = accumulator{}, false
	peak := max(w.Inflight, w.PeakInflight, tick.maxInflight)

	if dropped {
		// Observe already answered; the epoch measured the old limit.
		g.resetEpochLocked()
		return g.Limit()
	}
	g.mu.epoch.add(tick)
	g.mu.ticks++
	st := g.mu.epoch.stat()
	if g.mu.epoch.n < g.o.MinSamples || st.rtt <= 0 || st.rse > maxRSE {
		if g.mu.ticks >= maxEpochTicks {
			g.resetEpochLocked()
		}
		return g.Limit()
	}
	if g.mu.baseline == 0 || st.rtt < g.mu.baseline {
		g.mu.baseline = st.rtt
	}
	pending := g.learnLocked(st)

	l := g.mu.limit
	switch {
	case 2*float64(peak) < l:
		// App-limited: the epoch says nothing about a limit nobody
		// reached, so neither grow into it nor shrink it; it is done with,
		// so that its RTTs do not dilute a loaded epoch that follows.
		g.resetEpochLocked()
		return g.Limit()
	case !g.mu.trusted && pending && g.mu.ticks < maxEpochTicks:
		// The last step down is not judged yet: measure longer rather
		// than step again.
		return g.Limit()
	case !g.mu.trusted && l > float64(g.o.Min):
		// The baseline may itself be a loaded RTT (a high start sees only
		// loaded RTTs): walk down until RTT stops following concurrency.
		l *= probeBackoff
	case !g.mu.trusted:
		// At Min there is nowhere lower to look: the RTT at the lowest
		// concurrency allowed is the no-load RTT by definition.
		g.mu.trusted = true
		return g.Limit()
	default:
		l = g.step(l, g.mu.baseline, st.rtt)
	}
	g.setLocked(l)
	g.resetEpochLocked()
	return g.Limit()
}

// step is the gradient rule for a trusted baseline: limit l shrinks by
// the gradient while the epoch's mean rtt is above Tolerance x baseline,
// doubles while rtt stays close to baseline (slow start), and otherwise
// grows by its square root.
func (g *Gradient) step(l, baseline, rtt float64) float64 {
	grad := min(max(g.o.Tolerance*baseline/rtt, minGradient), 1)
	switch {
	case grad < 1:
		return l * (1 - g.o.Smoothing*(1-grad))
	case rtt <= baseline*(1+(g.o.Tolerance-1)/4):
		return l * 2
	}
	return l + max(1, math.Sqrt(l))
}

func (g *Gradient) resetEpochLocked() {
	g.mu.epoch, g.mu.ticks = accumulator{}, 0
}

// learnLocked compares the epoch st with the reference epoch once
// concurrency has moved by a tenth either way, and judges the elasticity of
// RTT to concurrency, e = ln(RTT ratio) / ln(concurrency ratio):
//
//   - e >= 1/2: RTT followed concurrency: queueing. Nothing to learn.
//   - |e| < 1/2: RTT stayed flat, so the lower of the two concurrencies was
//     not queueing and its RTT is a no-load RTT. The baseline becomes
//     trusted, and rises to that RTT / Tolerance if it was lower: the
//     service itself got slower (capacity loss, slow dependency), and the
//     limit should settle where RTT is that no-load RTT (the knee).
//   - e <= -1/2: RTT moved against concurrency, so the service changed
//     between the two epochs: the pair proves nothing.
//
// A verdict is drawn only when the two means are precise enough for the
// two hypotheses e = 0 and e = 1 to be evidenceZ standard errors from the
// boundary between them; until then the reference stays, so that a longer
// or further epoch can settle it, and learnLocked reports the comparison
// pending. Sampling noise must not pass for a
// flat RTT: that verdict is the only way the baseline rises, which is what
// keeps steady overload from dragging it up (Netflix #134). Raising it to
// RTT / Tolerance rather than RTT bounds the harm of a wrong verdict: at
// the limit the rule settles on, RTT is already Tolerance x baseline.
func (g *Gradient) learnLocked(st epochStat) (pending bool) {
	if !g.mu.hasRef {
		g.mu.ref, g.mu.hasRef = st, true
		return false
	}
	ref := g.mu.ref
	var low, high epochStat // by concurrency
	switch {
	case st.conc <= ref.conc*evidenceStep:
		low, high = st, ref
	case ref.conc <= st.conc*evidenceStep:
		low, high = ref, st
	default:
		return false
	}
	if !(low.conc > 0) {
		return false // no in-flight counts: nothing to compare
	}
	half := math.Log(high.conc/low.conc) / 2
	if evidenceZ*math.Hypot(low.rse, high.rse) >= half {
		return true // inconclusive: keep the reference
	}
	g.mu.ref = st
	if e := math.Log(high.rtt / low.rtt); e >= half || e <= -half {
		return false
	}
	g.mu.trusted = true
	g.mu.baseline = max(g.mu.baseline, low.rtt/g.o.Tolerance)
	return false
}

// setLocked clamps l into [Min, Max] and publishes it.
func (g *Gradient) setLocked(l float64) {
	l = min(max(l, float64(g.o.Min)), float64(g.o.Max))
	g.mu.limit = l
	g.limit.Store(int64(max(math.Round(l), float64(g.o.Min))))
}

// Baseline returns the current no-load RTT estimate, 0 before the first
// precise epoch, and whether it is trusted (some pair of epochs showed RTT
// not following concurrency). For metrics and tests.
func (g *Gradient) Baseline() (time.Duration, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return time.Duration(g.mu.baseline), g.mu.trusted
}
