package limit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// SignalFunc adapts a function to Signal, for callers with their own
// measure of saturation (a front proxy feeding its workers' signals). The
// function must be cheap and safe for concurrent use.
type SignalFunc func() float64

// Saturation returns f().
func (f SignalFunc) Saturation() float64 { return f() }

var _ Signal = SignalFunc(nil)

// RuntimeOptions configures a Runtime signal. The zero value is usable.
type RuntimeOptions struct {
	// SchedLatency is the 99th percentile of scheduling latency (how long
	// runnable goroutines waited for a P) that counts as fully saturated;
	// saturation is the percentile over SchedLatency, capped at 1. 0 means
	// 1ms: a goroutine that waits a millisecond for a CPU is queueing
	// behind CPU-bound work, the Go analogue of a saturated event loop.
	SchedLatency time.Duration
	// CPUs is how many CPUs the process may use. 0 means the lower of
	// GOMAXPROCS and the cgroup CPU quota (re-read every 10 s).
	CPUs float64
	// Logger receives a line when the cgroup quota is found, changes or
	// cannot be read; nil discards them.
	Logger *slog.Logger
}

// Validate reports every invalid field, one error each (errors.Join):
// a negative SchedLatency, or CPUs negative or not finite.
func (o RuntimeOptions) Validate() error {
	var errs []error
	if o.SchedLatency < 0 {
		errs = append(errs, fmt.Errorf("limit: Runtime SchedLatency %v is negative", o.SchedLatency))
	}
	if !(o.CPUs >= 0) || math.IsInf(o.CPUs, 0) {
		errs = append(errs, fmt.Errorf("limit: Runtime CPUs %v is not a non-negative number", o.CPUs))
	}
	return errors.Join(errs...)
}

func (o RuntimeOptions) withDefaults() RuntimeOptions {
	if o.SchedLatency == 0 {
		o.SchedLatency = time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Constants of the Runtime signal.
const (
	// schedQuantile is the scheduling-latency percentile compared with
	// SchedLatency.
	schedQuantile = 0.99
	// minSchedEvents is the fewest scheduling latencies (the runtime
	// records one transition in eight) an interval needs for its
	// percentile to count: a handful of wake-ups in an idle process is not
	// saturation, and their 99th percentile is just their maximum.
	minSchedEvents = 10
	// cpuHold is how many intervals a CPU busy fraction stays in use after
	// it was measured: the runtime refreshes the CPU metrics only when a
	// GC cycle ends.
	cpuHold = 4
	// cgroupRefresh is how often the cgroup quota is re-read.
	cgroupRefresh = 10 * time.Second
)

// Runtime is the saturation Signal of a Go process, the analogue of
// Node.js's event-loop utilisation. Run samples runtime/metrics every
// interval and keeps the higher of two measures:
//
//   - scheduling: the 99th percentile of /sched/latencies:seconds over the
//     interval (how long runnable goroutines waited for a P), over
//     SchedLatency, capped at 1. Runnable goroutines that wait are work
//     queued for CPU, whatever the CPU counters say; it is the primary
//     measure and reacts within one interval.
//   - CPU: the busy fraction of the usable CPUs, from /cpu/classes/
//     total, idle and gc/mark/idle (GC work on otherwise idle Ps is idle
//     time). It is what sees a cgroup quota below GOMAXPROCS: the kernel
//     throttles threads the runtime believes are running, which stretches
//     running time rather than waiting time, so scheduling latency can
//     stay low while the quota is spent.
//
// The runtime's CPU classes are estimates refreshed only at the end of a
// GC cycle (runtime/metrics says they are overestimates to be compared
// only with each other): an interval in which no cycle ended has no new
// CPU reading, and the last one is used for cpuHold intervals, then
// dropped. A process that allocates little is therefore judged on
// scheduling latency alone. Scheduling latency is itself sampled (one
// transition in eight) into buckets about 25% wide; the percentile is the
// lower bound of its bucket. Every goroutine counts, the runtime's own
// included (GC workers are woken straight onto a P), so a GC-heavy interval
// reads a little lower.
//
// Saturation is NaN (unknown) until Run has taken two readings and after
// it returns. Create one with NewRuntime; a Runtime is safe for concurrent
// use, and Saturation is one atomic load.
type Runtime struct {
	o       RuntimeOptions
	env     runtimeEnv
	sat     atomic.Uint64 // math.Float64bits
	running atomic.Bool
}

var _ Signal = (*Runtime)(nil)

// runtimeEnv is how a Runtime reads the process: replaced in tests.
type runtimeEnv struct {
	// newReader returns a function that fills a reading; each Run has its
	// own.
	newReader func() func(*runtimeReading)
	readFile  func(name string) ([]byte, error)
}

// runtimeReading is one reading of the metrics the signal uses.
type runtimeReading struct {
	cpuTotal, cpuIdle, cpuGCIdle float64 // cpu-seconds; NaN if unsupported
	gomaxprocs                   int     // 0 if unsupported
	sched                        []uint64
	schedBuckets                 []float64 // shared with the runtime: read only
}

// NewRuntime returns a Runtime signal, or o.Validate's error. It does
// nothing until Run.
func NewRuntime(o RuntimeOptions) (*Runtime, error) {
	return newRuntime(o, runtimeEnv{newReader: newMetricsReader, readFile: os.ReadFile})
}

func newRuntime(o RuntimeOptions, env runtimeEnv) (*Runtime, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	r := &Runtime{o: o.withDefaults(), env: env}
	r.sat.Store(math.Float64bits(math.NaN()))
	return r, nil
}

// Saturation returns the last value Run computed, in [0, 1], or NaN when
// Run is not running or has not yet taken two readings.
func (r *Runtime) Saturation() float64 { return math.Float64frombits(r.sat.Load()) }

// Run samples the runtime every interval until ctx is done, then sets
// Saturation to NaN and returns nil. It returns an error at once if
// interval is not positive or another Run of r is in progress.
func (r *Runtime) Run(ctx context.Context, interval time.Duration) error {
	if interval <= 0 {
		return fmt.Errorf("limit: Runtime interval %v is not positive", interval)
	}
	if !r.running.CompareAndSwap(false, true) {
		return errors.New("limit: Runtime is already running")
	}
	defer r.running.Store(false)
	defer r.sat.Store(math.Float64bits(math.NaN()))

	s := newSampler(r.o, r.env, r.env.newReader(), interval)
	s.start(time.Now())
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			r.sat.Store(math.Float64bits(s.sample(now)))
		}
	}
}

// sampler is the state of one Run; only its goroutine touches it.
type sampler struct {
	o        RuntimeOptions
	env      runtimeEnv
	read     func(*runtimeReading)
	interval time.Duration

	prev, cur runtimeReading

	cpus    float64 // cgroup quota, 0 for none
	cpusErr string
	cpusAt  time.Time

	cpu   float64 // last CPU busy fraction
	cpuAt time.Time
	cpuOK bool
}

func newSampler(o RuntimeOptions, env runtimeEnv, read func(*runtimeReading), interval time.Duration) *sampler {
	return &sampler{o: o.withDefaults(), env: env, read: read, interval: interval}
}

// start takes the first reading.
func (s *sampler) start(now time.Time) {
	s.read(&s.prev)
	s.refreshCPUs(now)
}

// sample takes a reading and returns the saturation since the previous one.
func (s *sampler) sample(now time.Time) float64 {
	if now.Sub(s.cpusAt) >= cgroupRefresh {
		s.refreshCPUs(now)
	}
	s.read(&s.cur)
	defer func() { s.prev, s.cur = s.cur, s.prev }()

	cpus := s.o.CPUs
	if cpus == 0 {
		cpus = s.cpus
	}
	if busy, ok := cpuBusy(s.prev, s.cur, cpus); ok {
		s.cpu, s.cpuAt, s.cpuOK = busy, now, true
	}
	cpu := math.NaN()
	if s.cpuOK && now.Sub(s.cpuAt) <= cpuHold*s.interval {
		cpu = s.cpu
	}
	return saturation(schedSaturation(s.prev, s.cur, s.o.SchedLatency), cpu)
}

func (s *sampler) refreshCPUs(now time.Time) {
	s.cpusAt = now
	if s.o.CPUs != 0 {
		return
	}
	cpus, err := cgroupCPUs(s.env.readFile)
	if err != nil {
		if err.Error() != s.cpusErr {
			s.o.Logger.Warn("cannot read the cgroup CPU quota; using GOMAXPROCS", "err", err)
		}
		s.cpusErr = err.Error()
		return // keep the last good value
	}
	s.cpusErr = ""
	if cpus != s.cpus {
		s.o.Logger.Info("cgroup CPU quota", "cpus", cpus, "gomaxprocs", s.prev.gomaxprocs)
	}
	s.cpus = cpus
}

// saturation combines the two measures: the higher one, ignoring an
// unknown (NaN) one; NaN if both are unknown.
func saturation(sched, cpu float64) float64 {
	switch {
	case math.IsNaN(sched):
		return cpu
	case math.IsNaN(cpu):
		return sched
	}
	return max(sched, cpu)
}

// schedSaturation is the 99th percentile of the scheduling latencies
// recorded between two readings over threshold, capped at 1; 0 when fewer
// than minSchedEvents were recorded, NaN when the metric is missing.
func schedSaturation(prev, cur runtimeReading, threshold time.Duration) float64 {
	if len(cur.sched) == 0 || len(prev.sched) != len(cur.sched) || len(cur.schedBuckets) != len(cur.sched)+1 {
		return math.NaN()
	}
	var total uint64
	for i, c := range cur.sched {
		total += c - prev.sched[i]
	}
	if total < minSchedEvents {
		return 0
	}
	rank := uint64(math.Ceil(schedQuantile * float64(total)))
	var seen uint64
	for i, c := range cur.sched {
		seen += c - prev.sched[i]
		if seen >= rank {
			lower := max(cur.schedBuckets[i], 0) // -Inf for the first bucket
			return min(lower/threshold.Seconds(), 1)
		}
	}
	return 1 // unreachable: seen reaches total >= rank
}

// cpuBusy returns the busy fraction of the usable CPUs between two readings:
// (total - idle - GC-idle) / (total x usable/GOMAXPROCS), where usable is
// cpus if positive and below GOMAXPROCS, else GOMAXPROCS; capped at 1. It
// reports false when the runtime refreshed no CPU metric in between (no GC
// cycle ended) or they are missing.
func cpuBusy(prev, cur runtimeReading, cpus float64) (float64, bool) {
	total := cur.cpuTotal - prev.cpuTotal
	if !(total > 0) || cur.gomaxprocs <= 0 {
		return 0, false // also NaN: unsupported
	}
	idle := cur.cpuIdle - prev.cpuIdle
	if gcIdle := cur.cpuGCIdle - prev.cpuGCIdle; gcIdle > 0 {
		idle += gcIdle
	}
	if math.IsNaN(idle) {
		return 0, false
	}
	usable := float64(cur.gomaxprocs)
	if cpus > 0 && cpus < usable {
		usable = cpus
	}
	busy := (total - idle) / (total * usable / float64(cur.gomaxprocs))
	return min(max(busy, 0), 1), true
}

// Metric names the signal reads.
const (
	metricCPUTotal   = "/cpu/classes/total:cpu-seconds"
	metricCPUIdle    = "/cpu/classes/idle:cpu-seconds"
	metricCPUGCIdle  = "/cpu/classes/gc/mark/idle:cpu-seconds"
	metricGOMAXPROCS = "/sched/gomaxprocs:threads"
	metricSched      = "/sched/latencies:seconds"
)

// newMetricsReader returns a reader of runtime/metrics that reuses its
// sample slice; the histogram counts are copied into the reading.
func newMetricsReader() func(*runtimeReading) {
	samples := []metrics.Sample{
		{Name: metricCPUTotal},
		{Name: metricCPUIdle},
		{Name: metricCPUGCIdle},
		{Name: metricGOMAXPROCS},
		{Name: metricSched},
	}
	float := func(v metrics.Value) float64 {
		if v.Kind() != metrics.KindFloat64 {
			return math.NaN()
		}
		return v.Float64()
	}
	return func(rd *runtimeReading) {
		metrics.Read(samples)
		rd.cpuTotal = float(samples[0].Value)
		rd.cpuIdle = float(samples[1].Value)
		rd.cpuGCIdle = float(samples[2].Value)
		rd.gomaxprocs = 0
		if v := samples[3].Value; v.Kind() == metrics.KindUint64 {
			rd.gomaxprocs = int(v.Uint64())
		}
		rd.sched, rd.schedBuckets = rd.sched[:0], nil
		if v := samples[4].Value; v.Kind() == metrics.KindFloat64Histogram {
			h := v.Float64Histogram()
			rd.sched = append(rd.sched, h.Counts...)
			rd.schedBuckets = h.Buckets
		}
	}
}
