package proxy_test

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// fakeMeter is a worker's CPU demand as the test sets it; as a kernel
// meter, its first reading is unknown (a demand is over two).
type fakeMeter struct {
	demand atomic.Uint64 // float64 bits
	reads  atomic.Int64
	pid    int
}

func (m *fakeMeter) set(d float64) { m.demand.Store(math.Float64bits(d)) }

func (m *fakeMeter) Read(time.Time) (float64, bool) {
	if m.reads.Add(1) == 1 {
		return 0, false
	}
	return math.Float64frombits(m.demand.Load()), true
}

// meterRig is a rig whose workers' CPU demand is m's.
func meterRig(t *testing.T, m *fakeMeter) *rig {
	o := proxy.Options{WorkerDemand: func(e supervisor.Endpoint) proxy.DemandMeter {
		if e.Pid != m.pid {
			return nil
		}
		return m
	}}
	return newRig(t, o, admission.Options{QueueSize: 100, QueueTimeout: 10 * time.Second})
}

// quietWorker is a rig with one adaptive worker whose process's CPU demand
// the returned meter gives, first at demand.
func quietWorker(t *testing.T, demand float64) (*rig, *fakeMeter) {
	m := &fakeMeter{pid: 77}
	m.set(demand)
	g := meterRig(t, m)
	g.addWorker(supervisor.Endpoint{Concurrency: 16, Adaptive: true, Pid: 77})
	return g, m
}

// A worker that reports nothing is judged by the CPU demand the kernel
// measures for its process, as if it had reported it: read again as it
// changes, it brings the limit of a worker whose renders became CPU-bound
// back as a report would.
func TestQuietWorkerJudgedByKernelDemand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, m := quietWorker(t, 0.05)
		start := time.Now()
		g.clients(12, 2*time.Second, "/sleep?d=50ms")
		e := endpointStats(t, g)
		if e.Limit < 8 || e.Saturation != 0.05 || e.SaturationSource != "kernel" {
			t.Fatalf("idle by the kernel's measure, 12 clients: got limit %d, saturation %v from %q; want at least 8, 0.05 from kernel",
				e.Limit, e.Saturation, e.SaturationSource)
		}
		// Renders that became CPU-bound: four times as long, each using
		// the saturated process for a third of its no-load latency.
		m.set(0.99)
		g.clients(12, 2*time.Second, "/sleep?d=200ms")
		if e := endpointStats(t, g); e.Limit > 2 || e.Saturation != 0.99 {
			t.Errorf("saturated by the kernel's measure: got limit %d, saturation %v; want back near 1, 0.99", e.Limit, e.Saturation)
		}
		// Read when added, then at most once a window.
		took := time.Since(start)
		if n := m.reads.Load(); n == 0 || n > int64(took/limit.WorkerWindow)+2 {
			t.Errorf("meter read %d times in %v; want once when added, then at most one a window", n, took)
		}
	})
}

// A fresh quiet worker's first window is judged by the kernel's measure:
// the meter is read when the worker is added, so the reading at its first
// request's end is already a demand, and its limit doubles at 100 ms, not
// once a second reading comes a window later.
func TestQuietWorkerFirstWindowMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, _ := quietWorker(t, 0.05)
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.clients(12, 300*time.Millisecond, "/sleep?d=50ms")
		}()
		time.Sleep(120 * time.Millisecond)
		if e := endpointStats(t, g); e.Limit < 2 || e.SaturationSource != "kernel" {
			t.Errorf("120 ms after a quiet worker's start under 12 clients: got limit %d, saturation from %q; want 2 or more, from the kernel", e.Limit, e.SaturationSource)
		}
		<-done
	})
}

// A worker that reports its saturation is believed over the kernel. The
// meter is still read, at most once a window, for its contention.
func TestWorkerReportWinsOverKernel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g, m := quietWorker(t, 0.99)
		start := time.Now()
		g.clients(12, 2*time.Second, "/sleep?d=50ms&sat=0.05")
		e := endpointStats(t, g)
		if e.Limit < 8 || e.SaturationSource != "worker" || e.Saturation != 0.05 {
			t.Errorf("worker reports 0.05, kernel 0.99: got limit %d, saturation %v from %q; want at least 8, 0.05 from the worker",
				e.Limit, e.Saturation, e.SaturationSource)
		}
		if n, took := m.reads.Load(), time.Since(start); n > int64(took/limit.WorkerWindow)+2 {
			t.Errorf("meter read %d times in %v; want at most once a window", n, took)
		}
	})
}

// Without a meter (a static upstream elsewhere) or with NoDemand, nothing
// is measured: the worker's limit has its latency alone.
func TestNoDemandWithoutPidOrWhenOff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &fakeMeter{pid: 77}
		m.set(0.99)
		g := meterRig(t, m)
		g.addWorker(supervisor.Endpoint{Concurrency: 16, Adaptive: true}) // no Pid
		g.clients(4, time.Second, "/sleep?d=50ms")
		if e := endpointStats(t, g); e.Saturation != -1 || m.reads.Load() != 0 {
			t.Errorf("static upstream: got saturation %v, %d meter reads; want -1 and none", e.Saturation, m.reads.Load())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{WorkerDemand: proxy.NoDemand}, admission.Options{})
		g.addWorker(supervisor.Endpoint{Concurrency: 16, Adaptive: true, Pid: 77})
		g.clients(4, time.Second, "/sleep?d=50ms")
		if e := endpointStats(t, g); e.Saturation != -1 {
			t.Errorf("NoDemand: got saturation %v; want -1", e.Saturation)
		}
	})
}

func TestKernelDemandFor(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	for _, tt := range []struct {
		e    supervisor.Endpoint
		want bool
	}{
		{supervisor.Endpoint{Pid: 42, Network: "tcp", Addr: "127.0.0.1:1"}, true},
		{supervisor.Endpoint{Network: "tcp", Addr: "127.0.0.1:8080"}, true}, // a static upstream on this host
		{supervisor.Endpoint{Network: "tcp", Addr: "[::1]:8080"}, true},
		{supervisor.Endpoint{Network: "tcp", Addr: "10.0.0.7:8080"}, false}, // another host's
		{supervisor.Endpoint{Network: "tcp", Addr: "worker1:8080"}, false},
		{supervisor.Endpoint{Network: "unix", Addr: "/run/w.sock"}, false},
	} {
		if got := proxy.KernelDemand(tt.e) != nil; got != tt.want {
			t.Errorf("KernelDemand(%+v) != nil is %v; want %v", tt.e, got, tt.want)
		}
	}
}

// phaseMeter is the CPU demand of a CPU-bound worker under phases of load:
// saturated while a phase runs, idle between, over the time since its last
// reading; as a kernel meter, its first reading is unknown.
type phaseMeter struct {
	mu     sync.Mutex
	last   time.Time
	onFrom time.Time // zero: no phase running
	busy   time.Duration
}

func (m *phaseMeter) phase(on bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if on {
		m.onFrom = now
		return
	}
	m.busy += now.Sub(m.onFrom)
	m.onFrom = time.Time{}
}

func (m *phaseMeter) Read(now time.Time) (float64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	busy := m.busy
	if !m.onFrom.IsZero() {
		busy += now.Sub(m.onFrom)
		m.onFrom = now
	}
	last := m.last
	m.last, m.busy = now, 0
	if last.IsZero() || !now.After(last) {
		return 0, false
	}
	return float64(busy) / float64(now.Sub(last)), true
}

// A CPU-bound worker's first reading after a lull covers the lull: left in,
// a loop saturated since load resumed read a few percent against the
// occupancy of the window load resumed in, and slow start doubled the
// limit of a worker that renders one request at a time (two Hypernova
// workers at the start of every turn of load after an idle one). The lull
// is left out, as the occupancy leaves it out: the limit stays at 1.
func TestDemandAfterLullLeavesTheLullOut(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &phaseMeter{}
		o := proxy.Options{WorkerDemand: func(supervisor.Endpoint) proxy.DemandMeter { return m }}
		g := newRig(t, o, admission.Options{QueueSize: 100, QueueTimeout: 10 * time.Second})
		g.addWorker(supervisor.Endpoint{Concurrency: 16, Adaptive: true, Pid: 77})
		load := func(d time.Duration) (peak int) {
			var hi atomic.Int64
			stop := make(chan struct{})
			var wg sync.WaitGroup
			wg.Go(func() {
				for {
					hi.Store(max(hi.Load(), int64(endpointStats(t, g).Limit)))
					select {
					case <-stop:
						return
					case <-time.After(5 * time.Millisecond):
					}
				}
			})
			m.phase(true)
			g.clients(4, d, "/cpu?d=50ms")
			m.phase(false)
			close(stop)
			wg.Wait()
			// A last request, once a window has passed, closes the window
			// the load ended in: the next starts idle.
			time.Sleep(2 * limit.WorkerWindow)
			m.phase(true)
			g.clients(1, time.Millisecond, "/cpu?d=50ms")
			m.phase(false)
			return int(hi.Load())
		}
		load(time.Second)
		if l := endpointStats(t, g).Limit; l != 1 {
			t.Fatalf("saturated under 4 clients for 1 s: limit %d, want 1", l)
		}
		for i := range 3 {
			time.Sleep(3 * time.Second)
			if got := load(500 * time.Millisecond); got > 1 {
				t.Errorf("saturated under 4 clients after 3 s of idle (%d): the limit reached %d, want 1", i+1, got)
			}
		}
	})
}

// lullMeter is a worker whose CPU is a collection's 15 ms a reading,
// whatever it serves; as a kernel meter, its first reading is unknown.
type lullMeter struct{ last atomic.Int64 }

func (m *lullMeter) Read(now time.Time) (float64, bool) {
	last := m.last.Swap(now.UnixNano())
	if last == 0 {
		return 0, false
	}
	return min(float64(15*time.Millisecond)/float64(now.UnixNano()-last), 1), true
}

// With the lull left out, a reading's CPU is spread over at least half a
// window: a lull's own CPU (a collection, a timer) spread over the single
// short request that ended it would read as saturation.
func TestDemandAfterLullSpreadOverHalfAWindow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &lullMeter{}
		o := proxy.Options{WorkerDemand: func(supervisor.Endpoint) proxy.DemandMeter { return m }}
		g := newRig(t, o, admission.Options{QueueSize: 100, QueueTimeout: 10 * time.Second})
		g.addWorker(supervisor.Endpoint{Concurrency: 16, Adaptive: true, Pid: 77})
		g.clients(1, 10*time.Millisecond, "/sleep?d=10ms")
		time.Sleep(3 * time.Second)
		g.clients(1, 10*time.Millisecond, "/sleep?d=10ms")
		if e := endpointStats(t, g); e.SaturationSource != "kernel" || e.Saturation > 0.3 {
			t.Errorf("15 ms of CPU over a 3 s lull and a 10 ms request: read %v from %q, want at most 0.3 (over half a window) from the kernel",
				e.Saturation, e.SaturationSource)
		}
	})
}
