package proxy_test

import (
	"math"
	"runtime"
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
