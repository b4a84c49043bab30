package limit

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// AutoOptions configures an Auto limit. The zero value is the default the
// admission Controller uses when no limit is configured.
type AutoOptions struct {
	// Initial is the starting limit; 0 means the floor (Min). Clamped into
	// [Min, Max].
	Initial int
	// Min is the lowest limit, raised to the usable CPUs rounded up as
	// Window.CPUs reports them (before the first window: GOMAXPROCS, or a
	// lower cgroup quota); 0 means just the CPUs. Fewer requests than
	// CPUs cannot oversubscribe the CPUs, so the CPU rule never needs to
	// go lower, and an I/O-bound service is never throttled below it.
	Min int
	// Max is the highest limit; 0 means 1000.
	Max int
	// CPUs is the usable CPUs until a Window reports them (Window.CPUs);
	// 0 means GOMAXPROCS, or the cgroup CPU quota when lower.
	CPUs float64
	// Tolerance is how much slower than its lowest recent RTT the service
	// may get, while the limit binds, before the delivery bound cuts the
	// limit to the knee; 0 means 1.5.
	Tolerance float64
}

// Validate reports every invalid field, one error each (errors.Join).
func (o AutoOptions) Validate() error {
	var errs []error
	if o.Initial < 0 {
		errs = append(errs, fmt.Errorf("limit: Auto Initial %d is negative", o.Initial))
	}
	if o.Min < 0 {
		errs = append(errs, fmt.Errorf("limit: Auto Min %d is negative", o.Min))
	}
	if o.Max < 0 {
		errs = append(errs, fmt.Errorf("limit: Auto Max %d is negative", o.Max))
	}
	if o.Max >= 0 && o.Min > cmp.Or(o.Max, 1000) {
		errs = append(errs, fmt.Errorf("limit: Auto Min %d is above Max %d", o.Min, cmp.Or(o.Max, 1000)))
	}
	if !(o.CPUs >= 0) || math.IsInf(o.CPUs, 0) {
		errs = append(errs, fmt.Errorf("limit: Auto CPUs %v is not a non-negative number", o.CPUs))
	}
	if !(o.Tolerance == 0 || o.Tolerance >= 1) || math.IsInf(o.Tolerance, 0) {
		errs = append(errs, fmt.Errorf("limit: Auto Tolerance %v is below 1", o.Tolerance))
	}
	return errors.Join(errs...)
}

// Constants of the Auto rule; the type documentation explains them.
const (
	// AutoWindow is the sample window Auto is designed for.
	AutoWindow = 100 * time.Millisecond
	// autoBusyTarget is the CPU busy fraction growth aims at and stops at.
	autoBusyTarget = 0.9
	// autoMaxGrowth bounds one window's growth: a cold start reaches
	// 128 from 2 in 300 ms.
	autoMaxGrowth = 4
	// autoOwnShare is the share of the requests in flight that runnable
	// goroutines must reach to be put down to the handlers
	// oversubscribing the CPUs.
	autoOwnShare = 0.25
	// autoSlackShare is the share of the CPUs, in runnable goroutines,
	// tolerated before the CPUs count as oversubscribed (at least one).
	autoSlackShare = 0.25
)

// Auto is the limit that finds itself: the default of an admission
// Controller. It combines a CPU rule, fed by the Window's load fields (see
// Probe), with a delivery bound fed by the samples, and takes the lower of
// the two, never below the floor Min (the usable CPUs):
//
//	CPU rule, every window, with R = Runnable, M = MeanInflight, B = CPUBusy:
//	  R > slack, R >= M/4:                     C = max(floor, min(C, round(M - R)))
//	  R > slack, R < M/4 (not the handlers):   C holds
//	  limit binding, R <= slack, B < 0.9:      C = clamp(ceil(M x 0.9 / B), C+1, 4C)
//	  otherwise:                               C holds
//	Delivery bound D, every round in which the limit binds (rtt: the round's mean RTT):
//	  rtt > Tolerance x minRTT, L > BDP:       D = min(D, BDP), verified by the next round
//	  rtt > Tolerance x minRTT, L <= BDP:      D = L/2, verified by the next round
//	  rtt within the tolerance:                D = max(D, L + max(sqrt(L), L/4))
//	  a verified cut that lost 40% of the rate: D = the limit before it; records dropped
//	L = max(floor, min(C, D))
//
// where slack = max(1, CPUs/4), the limit binds when the window's peak
// in-flight count reached L or requests waited, a round is the windows at
// one limit that hold 10 samples (usually one), BDP is the best
// completion rate (the samples counted by their Weight) over the last
// second times the lowest RTT over the last 10 s, and D starts at Max and
// holds, recording nothing, while R > slack or B >= 0.9 (the CPUs are the
// bottleneck, and the CPU rule acts).
//
// Why. A Go service whose handlers burn CPU does not slow down gracefully
// when more of them run than there are Ps: the scheduler time-slices them,
// and the goroutines that accept, read and answer requests (sheds
// included) wait behind them, so the queue forms in unread connections
// where no limit sees it. Runnable goroutines are that wait, measured
// directly: with M handlers admitted and fewer CPUs, about M - CPUs of them
// wait for a P, so M - R is the concurrency the CPUs actually serve, and
// the limit jumps there in one window instead of creeping down by a tenth
// per second. An I/O-bound handler (waiting on a downstream) leaves the run
// queues empty and the CPUs idle, so the rule grows the limit, up to
// fourfold a window while the CPUs are far from busy and aiming at the concurrency the busy
// fraction projects to fill them (CPU per request being constant) as they
// fill up. What the CPU rule cannot see is a downstream with its own
// concurrency cap (a connection pool, a semaphore): the CPUs stay idle
// however many requests wait for it. Its completions per second stop
// growing and its RTT grows instead; the delivery bound (the package
// documentation gives its reasoning) cuts the limit to the concurrency
// that delivered the best rate, which loses no throughput. It records
// nothing while the CPUs are the bottleneck (a CPU-bound phase's short RTT
// would set the knee of the I/O-bound phase after it), and because its
// records may still describe a workload that has since changed, every cut
// is a test: a cut that lost throughput was wrong, and is undone.
//
// The rule is a function of the Window: a Window built by hand with zero
// Runnable and CPUBusy reads as an idle process. Create one with NewAuto;
// the zero value is not usable. An Auto is safe for concurrent use; Limit
// is one atomic load, Observe three atomic adds.
type Auto struct {
	o   AutoOptions
	rtt *deliveryBound

	limit atomic.Int64

	sat atomic.Uint64 // math.Float64bits of Saturation

	mu   sync.Mutex // serialises Tick
	cpu  int        // the CPU rule's limit
	cpus float64    // the last usable CPUs known
}

var (
	_ Algorithm = (*Auto)(nil)
	_ Paced     = (*Auto)(nil)
	_ Signal    = (*Auto)(nil)
)

// NewAuto returns an Auto limit, or o.Validate's error.
func NewAuto(o AutoOptions) (*Auto, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if o.Max == 0 {
		o.Max = 1000
	}
	if o.Tolerance == 0 {
		o.Tolerance = 1.5
	}
	a := &Auto{o: o, rtt: newDeliveryBound(o.Tolerance, o.Max), cpus: o.CPUs}
	if a.cpus == 0 {
		a.cpus = float64(runtime.GOMAXPROCS(0))
		if q, err := cgroupCPUs(os.ReadFile); err == nil && q > 0 && q < a.cpus {
			a.cpus = q
		}
	}
	a.cpu = a.clamp(o.Initial)
	if o.Initial == 0 {
		a.cpu = a.floor()
	}
	a.limit.Store(int64(a.cpu))
	a.sat.Store(math.Float64bits(math.NaN()))
	return a, nil
}

// Saturation reports how oversubscribed the CPUs were in the last window:
// the mean runnable goroutines over twice the slack, capped at 1, so that
// it reaches 1 when they clearly are, scaled down while they are fewer
// than a quarter of the requests in flight (the wait is then not the
// handlers' doing); NaN before a window with a runnable count. An admission Controller with no Signal of its own uses it to shed
// at once, rather than queue, while the CPUs are oversubscribed.
func (a *Auto) Saturation() float64 { return math.Float64frombits(a.sat.Load()) }

// floor is the lowest limit: the usable CPUs rounded up, or Min if
// higher, within Max.
func (a *Auto) floor() int {
	return min(max(1, a.o.Min, int(math.Ceil(a.cpus-1e-9))), a.o.Max)
}

func (a *Auto) clamp(n int) int { return min(max(n, a.floor()), a.o.Max) }

// Limit returns the current limit.
func (a *Auto) Limit() int { return int(a.limit.Load()) }

// Window returns AutoWindow: the CPU rule reacts within one window.
func (a *Auto) Window() time.Duration { return AutoWindow }

// Observe feeds the RTT bound a completed request.
func (a *Auto) Observe(s Sample) int {
	a.rtt.observe(s)
	return a.Limit()
}

// Tick applies the rule to the window and returns the new limit.
func (a *Auto) Tick(w Window) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.CPUs > 0 {
		a.cpus = w.CPUs
	}
	floor := a.floor()
	l := int(a.limit.Load())

	slack := max(1, autoSlackShare*a.cpus)
	// Goroutines wait for a P because the admitted handlers oversubscribe
	// the CPUs (then the waiting ones are a good share of those in flight:
	// nearly all but CPUs of them, for CPU-bound handlers), or for reasons
	// fewer admissions do not remove: an I/O-bound service's goroutines
	// that read requests and wake from their waits, on a machine whose
	// CPUs other processes hold (a noisy neighbour, a shared VM). Cutting
	// to M - R there would cut again every window, down to the floor. So
	// runnable goroutines count in proportion to their share of the
	// requests in flight, fully from a quarter of them.
	own := 1.0
	if w.MeanInflight > 0 {
		own = math.Min(1, w.Runnable/(autoOwnShare*w.MeanInflight))
	}
	sat := math.Min(1, w.Runnable/(2*slack))
	if own < 1 { // NaN compares false
		sat *= own
	}
	a.sat.Store(math.Float64bits(sat))
	binding := max(w.PeakInflight, w.Inflight) >= l || w.Queued > 0
	oversubscribed := w.Runnable > slack // NaN compares false: unknown is not oversubscribed
	g := a.rtt.tick(w.Now, l, binding, oversubscribed || w.CPUBusy >= autoBusyTarget)
	c := a.cpu
	switch {
	case oversubscribed && !(own < 1):
		c = min(c, int(math.Round(w.MeanInflight-w.Runnable)))
	case oversubscribed: // not the handlers' doing: hold
	case binding && c <= g && !(w.CPUBusy >= autoBusyTarget):
		next := 2 * c
		if w.CPUBusy > 0 && w.MeanInflight > 0 {
			next = int(math.Ceil(w.MeanInflight * autoBusyTarget / w.CPUBusy))
		}
		c = min(max(next, c+1), autoMaxGrowth*c)
	}
	a.cpu = a.clamp(c)
	l = max(floor, min(a.cpu, g))
	a.limit.Store(int64(l))
	return l
}
