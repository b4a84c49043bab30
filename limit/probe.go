package limit

import (
	"math"
	"os"
	"runtime"
	"runtime/metrics"
	"time"
)

// Probe reads the instantaneous CPU load of a Go process, cheaply enough to
// be read every few milliseconds: the goroutines ready to run but waiting
// for a P, the CPU time the process has used, and the CPUs it may use.
//
// The runnable count is /sched/goroutines/runnable:goroutines (Go 1.26):
// the run queues' lengths, read under the scheduler lock in O(GOMAXPROCS),
// no stop-the-world. Unlike the runtime's CPU classes, which are refreshed
// only when a GC cycle ends, the CPU time is getrusage(RUSAGE_SELF), fresh
// at every read.
//
// Create one with NewProbe. A Probe is not safe for concurrent use: one
// goroutine (the admission Controller's window loop) owns it.
type Probe struct {
	samples  []metrics.Sample
	readFile func(string) ([]byte, error)
	cgroup   float64 // quota in CPUs, 0 for none
	cgroupAt time.Time
}

// ProbeReading is one reading of a Probe.
type ProbeReading struct {
	// Runnable is the number of goroutines waiting for a P; -1 when the
	// runtime does not report it.
	Runnable int
	// CPUTime is the user and system CPU time the process has used since
	// it started; negative when unknown.
	CPUTime time.Duration
	// CPUs is how many CPUs the process may use: GOMAXPROCS, or the cgroup
	// CPU quota when lower (re-read every 10 s).
	CPUs float64
}

const metricRunnable = "/sched/goroutines/runnable:goroutines"

// NewProbe returns a Probe of this process.
func NewProbe() *Probe {
	return &Probe{
		samples:  []metrics.Sample{{Name: metricRunnable}},
		readFile: os.ReadFile,
	}
}

// Read returns the process's load at now; now only paces the re-reading of
// the cgroup quota.
func (p *Probe) Read(now time.Time) ProbeReading {
	r := ProbeReading{Runnable: -1, CPUTime: -1, CPUs: float64(runtime.GOMAXPROCS(0))}
	metrics.Read(p.samples)
	if v := p.samples[0].Value; v.Kind() == metrics.KindUint64 {
		r.Runnable = int(min(v.Uint64(), math.MaxInt32))
	}
	r.CPUTime = processCPUTime()
	if p.cgroupAt.IsZero() || now.Sub(p.cgroupAt) >= cgroupRefresh {
		p.cgroupAt = now
		if q, err := cgroupCPUs(p.readFile); err == nil {
			p.cgroup = q // on error keep the last good value
		}
	}
	if p.cgroup > 0 && p.cgroup < r.CPUs {
		r.CPUs = p.cgroup
	}
	return r
}
