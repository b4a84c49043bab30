package proxy

import (
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/cpudemand"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// DemandMeter reads a worker process's CPU demand, in [0, 1], since its
// last reading, and whether it is known (cpudemand.Meter is one). Read is
// never called concurrently for one meter.
type DemandMeter interface {
	Read(now time.Time) (float64, bool)
}

// KernelDemand is Options.WorkerDemand's default, on Linux: the kernel's
// scheduler statistics (package cpudemand) of the worker's process, the
// one the supervisor runs (Endpoint.Pid), or else, for a static upstream
// on a loopback TCP address, the one found listening there. Elsewhere, and
// for other upstreams, nothing.
func KernelDemand(e supervisor.Endpoint) DemandMeter {
	if runtime.GOOS != "linux" {
		return nil
	}
	if e.Pid > 0 {
		return cpudemand.New("/proc", e.Pid)
	}
	if ap, err := netip.ParseAddrPort(e.Addr); e.Network == "tcp" && err == nil && ap.Addr().IsLoopback() {
		return cpudemand.NewListener("/proc", e.Addr)
	}
	return nil
}

// A ContentionMeter is a DemandMeter that also tells how much the worker's
// CPU is shared (cpudemand.Meter is one): the share of the time its main
// thread was runnable that it waited for a CPU, over the last Read that
// returned a demand, and whether it is known. The proxy withdraws a
// contended worker's lookahead (see pool.go).
type ContentionMeter interface {
	DemandMeter
	Contention() (float64, bool)
}

var _ ContentionMeter = (*cpudemand.Meter)(nil) // KernelDemand's meters tell contention

// NoDemand is an Options.WorkerDemand that measures nothing: a worker that
// reports no saturation is judged by its throughput and latency alone.
func NoDemand(supervisor.Endpoint) DemandMeter { return nil }

// demandFeed reads an endpoint's meter at most once a window, outside the
// pool's mutex (a reading is a file read or two): the demand goes to the
// worker's limit as if the worker had reported it, until the worker
// reports its saturation itself; the contention, to its lookahead, for as
// long as it runs.
type demandFeed struct {
	m     DemandMeter
	every time.Duration
	due   atomic.Int64 // the monotonic nanoseconds since start of the next reading
	start time.Time
	mu    sync.Mutex // one reader at a time
	own   atomic.Bool
}

// newDemandFeed returns a feed of m, read once at now: a meter's first
// reading only starts its count (a demand is over the time between two),
// and taken at the first request's end it left the worker's first window
// without a reading, its limit at 1 for a window or two more while a fresh
// front's backlog built.
func newDemandFeed(m DemandMeter, every time.Duration, now time.Time) *demandFeed {
	m.Read(now)
	return &demandFeed{m: m, every: every, start: now}
}

// demandReading is what a demandFeed read: a demand when measured, a
// contention when contended (known).
type demandReading struct {
	demand     float64
	measured   bool
	contention float64
	contended  bool
}

// read returns a reading when one is due: its demand only while the
// worker has never reported its saturation itself.
func (d *demandFeed) read(now time.Time) demandReading {
	at := int64(now.Sub(d.start))
	if at < d.due.Load() || !d.mu.TryLock() {
		return demandReading{}
	}
	defer d.mu.Unlock()
	if at < d.due.Load() {
		return demandReading{}
	}
	d.due.Store(at + int64(d.every))
	var r demandReading
	r.demand, r.measured = d.m.Read(now)
	if c, ok := d.m.(ContentionMeter); ok && r.measured {
		// Only with a reading of this window: a meter that lost its
		// worker, or found it multi-threaded, tells a stale one.
		r.contention, r.contended = c.Contention()
	}
	if d.own.Load() {
		r.demand, r.measured = 0, false
	}
	return r
}

// reported records that the worker reports its saturation itself: its
// word is taken over the kernel's from then on.
func (d *demandFeed) reported() { d.own.Store(true) }
