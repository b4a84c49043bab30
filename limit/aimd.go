package limit

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
)

// AIMDOptions configures an AIMD limit. The zero value is a limit that
// starts wide open at 1000, so that nothing is refused before the first
// sign of saturation, and backs off when the process is 95% saturated.
//
// A hard ceiling on requests in flight (sluice.yaml's
// maxConcurrentRequests) is the caller's job: pass Max = min(maxLimit,
// maxConcurrentRequests). Initial is clamped into [Min, Max], so lowering
// Max alone is enough.
type AIMDOptions struct {
	// Initial is the starting limit; 0 means Max (wide open: the rule only
	// backs off, so a low start would refuse work before any saturation).
	Initial int
	// Min is the lowest limit; 0 means 1.
	Min int
	// Max is the highest limit; 0 means 1000.
	Max int
	// MaxSaturation is the saturation at or above which the limit backs
	// off, in (0, 1]; 0 means 0.95: a Node.js event loop busy 95% of the
	// time has no room left for a burst (sluice.yaml's eluMax).
	MaxSaturation float64
}

// Validate reports every invalid field, one error each (errors.Join):
// a negative number, Min above Max, or MaxSaturation outside [0, 1] (0 meaning the default).
func (o AIMDOptions) Validate() error {
	var errs []error
	if o.Initial < 0 {
		errs = append(errs, fmt.Errorf("limit: AIMD Initial %d is negative", o.Initial))
	}
	if o.Min < 0 {
		errs = append(errs, fmt.Errorf("limit: AIMD Min %d is negative", o.Min))
	}
	if o.Max < 0 {
		errs = append(errs, fmt.Errorf("limit: AIMD Max %d is negative", o.Max))
	}
	if !(o.MaxSaturation >= 0 && o.MaxSaturation <= 1) {
		errs = append(errs, fmt.Errorf("limit: AIMD MaxSaturation %v is outside [0, 1]", o.MaxSaturation))
	}
	if d := o.withDefaults(); d.Min > d.Max {
		errs = append(errs, fmt.Errorf("limit: AIMD Min %d is above Max %d", d.Min, d.Max))
	}
	return errors.Join(errs...)
}

func (o AIMDOptions) withDefaults() AIMDOptions {
	if o.Min == 0 {
		o.Min = 1
	}
	if o.Max == 0 {
		o.Max = 1000
	}
	if o.Initial == 0 {
		o.Initial = o.Max
	}
	o.Initial = min(max(o.Initial, o.Min), o.Max)
	if o.MaxSaturation == 0 {
		o.MaxSaturation = 0.95
	}
	return o
}

// AIMD is a saturation-driven limit: additive (square-root) increase,
// multiplicative decrease, once per sample window. It suits a process
// that reports its own saturation (a Node.js worker's event-loop
// utilization), where the signal, not latency, says when to back off.
//
// On Tick, with inflight = max(w.Inflight, w.PeakInflight):
//
//	w.Saturation >= MaxSaturation and inflight >= L/2:  L = max(Min, floor(0.9 L))
//	otherwise:                                          L = min(Max, L + max(1, ceil(sqrt(L))))
//
// The in-flight guard keeps a saturation spike that the requests did not
// cause (a GC cycle, a neighbour's burst) from shrinking a limit the
// application is not using. A NaN saturation is unknown and counts as below
// MaxSaturation. Observe never changes the limit: AIMD reacts to the
// process's saturation, not to individual requests.
//
// Create one with NewAIMD; the zero value is not usable. An AIMD is safe for
// concurrent use; Observe and Limit are one atomic load.
type AIMD struct {
	o     AIMDOptions
	limit atomic.Int64
	mu    sync.Mutex // serialises Tick
}

var _ Algorithm = (*AIMD)(nil)

// NewAIMD returns an AIMD limit at o.Initial, or o.Validate's error.
func NewAIMD(o AIMDOptions) (*AIMD, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	a := &AIMD{o: o.withDefaults()}
	a.limit.Store(int64(a.o.Initial))
	return a, nil
}

// Limit returns the current limit.
func (a *AIMD) Limit() int { return int(a.limit.Load()) }

// Observe returns the current limit; a completed request does not move it.
func (a *AIMD) Observe(Sample) int { return a.Limit() }

// Tick applies the rule above to the window and returns the new limit.
func (a *AIMD) Tick(w Window) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := int(a.limit.Load())
	inflight := max(w.Inflight, w.PeakInflight)
	if w.Saturation >= a.o.MaxSaturation && 2*inflight >= l { // NaN compares false
		l = max(a.o.Min, int(math.Floor(0.9*float64(l))))
	} else {
		l = min(a.o.Max, l+max(1, int(math.Ceil(math.Sqrt(float64(l))))))
	}
	a.limit.Store(int64(l))
	return l
}
