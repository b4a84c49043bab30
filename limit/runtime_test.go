package limit

import (
	"context"
	"math"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// testBuckets are histogram boundaries in seconds, shaped like the
// runtime's: -Inf first, +Inf last.
var testBuckets = []float64{math.Inf(-1), 0, 1e-6, 1e-4, 5e-4, 1e-3, 2e-3, math.Inf(1)}

// sched returns a reading whose scheduling histogram has the given counts
// per testBuckets bucket.
func sched(counts ...uint64) runtimeReading {
	c := make([]uint64, len(testBuckets)-1)
	copy(c, counts)
	return runtimeReading{sched: c, schedBuckets: testBuckets}
}

func TestSchedSaturation(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name      string
		prev, cur runtimeReading
		threshold time.Duration
		want      float64
	}{
		{"no scheduling at all", sched(), sched(), time.Millisecond, 0},
		{"too few events to be saturated", sched(), sched(0, 0, 0, 0, 0, 0, 9), time.Millisecond, 0},
		{"quick scheduling", sched(), sched(0, 0, 100), time.Millisecond, 0.001}, // 1us / 1ms
		{"p99 in the 500us bucket", sched(), sched(0, 0, 50, 0, 50), time.Millisecond, 0.5},
		{"p99 at the threshold", sched(), sched(0, 0, 50, 0, 0, 50), time.Millisecond, 1},
		{"p99 above the threshold is capped", sched(), sched(0, 0, 0, 0, 0, 0, 100), time.Millisecond, 1},
		{"a 500us threshold", sched(), sched(0, 0, 50, 0, 50), 500 * time.Microsecond, 1},
		{"p99 ignores a 1% tail", sched(), sched(0, 0, 99, 0, 0, 0, 1), time.Millisecond, 0.001},
		{"p99 sees a 2% tail", sched(), sched(0, 0, 98, 0, 0, 0, 2), time.Millisecond, 1},
		{"-Inf lower bound reads as 0", sched(), sched(100), time.Millisecond, 0},
		{"only the delta counts", sched(0, 0, 0, 0, 0, 0, 1000), sched(0, 0, 100, 0, 0, 0, 1000), time.Millisecond, 0.001},
		{"missing metric", runtimeReading{}, runtimeReading{}, time.Millisecond, nan},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := schedSaturation(tt.prev, tt.cur, tt.threshold)
			if !(math.Abs(got-tt.want) < 1e-12 || math.IsNaN(got) && math.IsNaN(tt.want)) {
				t.Errorf("schedSaturation() = %v, want %v", got, tt.want)
			}
		})
	}
}

// cpu returns a reading of the CPU classes.
func cpu(total, idle, gcIdle float64, gomaxprocs int) runtimeReading {
	return runtimeReading{cpuTotal: total, cpuIdle: idle, cpuGCIdle: gcIdle, gomaxprocs: gomaxprocs}
}

func TestCPUBusy(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		name      string
		prev, cur runtimeReading
		cpus      float64
		want      float64
		wantOK    bool
	}{
		{"no GC cycle ended: no new reading", cpu(10, 5, 0, 2), cpu(10, 5, 0, 2), 0, 0, false},
		{"half busy", cpu(10, 5, 0, 2), cpu(12, 6, 0, 2), 0, 0.5, true},
		{"fully busy", cpu(10, 5, 0, 2), cpu(12, 5, 0, 2), 0, 1, true},
		{"idle", cpu(10, 5, 0, 2), cpu(12, 7, 0, 2), 0, 0, true},
		{"GC work on idle Ps is idle", cpu(10, 5, 1, 2), cpu(12, 5.5, 1.5, 2), 0, 0.5, true},
		{"quota of 1 CPU under GOMAXPROCS 2, 1 CPU busy", cpu(0, 0, 0, 2), cpu(2, 1, 0, 2), 1, 1, true},
		{"quota of 1.5 CPUs, 1.2 busy", cpu(0, 0, 0, 2), cpu(2, 0.8, 0, 2), 1.5, 0.8, true},
		{"quota above GOMAXPROCS is ignored", cpu(0, 0, 0, 2), cpu(2, 1, 0, 2), 4, 0.5, true},
		{"over the quota is capped at 1", cpu(0, 0, 0, 4), cpu(4, 0, 0, 4), 1, 1, true},
		{"unsupported metrics", cpu(nan, nan, nan, 0), cpu(nan, nan, nan, 0), 0, 0, false},
		{"unsupported idle", cpu(0, nan, 0, 2), cpu(2, nan, 0, 2), 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := cpuBusy(tt.prev, tt.cur, tt.cpus)
			if ok != tt.wantOK || math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("cpuBusy() = %v, %v; want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestSaturationCombines(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		sched, cpu, want float64
	}{
		{0.2, 0.97, 0.97},
		{1, 0.3, 1},
		{0.4, nan, 0.4},
		{nan, 0.6, 0.6},
		{nan, nan, nan},
	}
	for _, tt := range tests {
		got := saturation(tt.sched, tt.cpu)
		if got != tt.want && !(math.IsNaN(got) && math.IsNaN(tt.want)) {
			t.Errorf("saturation(%v, %v) = %v, want %v", tt.sched, tt.cpu, got, tt.want)
		}
	}
}

// script is a fake runtime: each read returns the next reading.
type script struct {
	mu       sync.Mutex
	readings []runtimeReading
	reads    int
}

func (s *script) reader() func(*runtimeReading) {
	return func(rd *runtimeReading) {
		s.mu.Lock()
		defer s.mu.Unlock()
		r := s.readings[min(s.reads, len(s.readings)-1)]
		s.reads++
		rd.cpuTotal, rd.cpuIdle, rd.cpuGCIdle, rd.gomaxprocs = r.cpuTotal, r.cpuIdle, r.cpuGCIdle, r.gomaxprocs
		rd.sched = append(rd.sched[:0], r.sched...)
		rd.schedBuckets = r.schedBuckets
	}
}

// reading is a reading with both measures: CPU classes and n quick
// scheduling events so far.
func reading(total, idle float64, quick uint64) runtimeReading {
	r := sched(0, 0, quick)
	r.cpuTotal, r.cpuIdle, r.gomaxprocs = total, idle, 2
	return r
}

// TestSamplerHoldsCPUReading checks that a CPU busy fraction, refreshed only
// when a GC cycle ends, is used for cpuHold intervals and then dropped.
func TestSamplerHoldsCPUReading(t *testing.T) {
	sc := &script{readings: []runtimeReading{
		reading(0, 0, 0),
		reading(2, 0.1, 100), // a GC ended: 95% busy
		reading(2, 0.1, 200), // no GC since: same CPU classes
		reading(2, 0.1, 300),
		reading(2, 0.1, 400),
		reading(2, 0.1, 500),
		reading(2, 0.1, 600), // 5 intervals after the reading: dropped
	}}
	fs := files{}
	s := newSampler(RuntimeOptions{SchedLatency: time.Millisecond}, runtimeEnv{readFile: fs.read}, sc.reader(), time.Second)
	t0 := time.Unix(0, 0)
	s.start(t0)
	want := []float64{0.95, 0.95, 0.95, 0.95, 0.95, 0.001}
	for i, w := range want {
		now := t0.Add(time.Duration(i+1) * time.Second)
		if got := s.sample(now); math.Abs(got-w) > 1e-9 {
			t.Errorf("sample %d at +%v: got %v, want %v", i, now.Sub(t0), got, w)
		}
	}
}

// TestSamplerCgroupQuota checks that the cgroup quota scales the CPU
// measure, is re-read every cgroupRefresh, and that CPUs overrides it.
func TestSamplerCgroupQuota(t *testing.T) {
	t0 := time.Unix(0, 0)
	fs := files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "100000 100000\n"}
	mk := func(o RuntimeOptions) *sampler {
		sc := &script{readings: []runtimeReading{
			reading(0, 0, 0),
			reading(2, 1.5, 0),
			reading(4, 3, 0),
			reading(6, 4.5, 0),
		}}
		return newSampler(o, runtimeEnv{readFile: fs.read}, sc.reader(), time.Second)
	}

	s := mk(RuntimeOptions{SchedLatency: time.Millisecond})
	s.start(t0)
	// 0.5 cpu-seconds busy over 1 s: half of the 1-CPU quota.
	if got := s.sample(t0.Add(time.Second)); got != 0.5 {
		t.Errorf("quota 1 CPU: got %v, want 0.5", got)
	}
	fs["/sys/fs/cgroup/cpu.max"] = "50000 100000\n"
	if got := s.sample(t0.Add(2 * time.Second)); got != 0.5 {
		t.Errorf("quota changed but not yet re-read: got %v, want 0.5", got)
	}
	if got := s.sample(t0.Add(cgroupRefresh)); got != 1 {
		t.Errorf("quota 0.5 CPU after refresh: got %v, want 1", got)
	}

	fs["/sys/fs/cgroup/cpu.max"] = "100000 100000\n"
	s = mk(RuntimeOptions{SchedLatency: time.Millisecond, CPUs: 2})
	s.start(t0)
	if got := s.sample(t0.Add(time.Second)); got != 0.25 {
		t.Errorf("CPUs 2 overriding a 1-CPU quota: got %v, want 0.25", got)
	}
}

// TestSamplerCgroupErrorKeepsLastQuota checks that a failed re-read keeps
// the last good quota and logs once.
func TestSamplerCgroupErrorKeepsLastQuota(t *testing.T) {
	t0 := time.Unix(0, 0)
	fs := files{"/proc/self/cgroup": "0::/\n", "/sys/fs/cgroup/cpu.max": "100000 100000\n"}
	var log strings.Builder
	o := RuntimeOptions{SchedLatency: time.Millisecond, Logger: newTextLogger(&log)}
	sc := &script{readings: []runtimeReading{reading(0, 0, 0), reading(2, 1.5, 0), reading(4, 3, 0), reading(6, 4.5, 0)}}
	s := newSampler(o, runtimeEnv{readFile: fs.read}, sc.reader(), time.Second)
	s.start(t0)
	fs["/sys/fs/cgroup/cpu.max"] = "EACCES"
	for i := 1; i <= 3; i++ {
		if got := s.sample(t0.Add(time.Duration(i) * cgroupRefresh)); got != 0.5 {
			t.Errorf("sample %d after the quota became unreadable: got %v, want 0.5 (last good quota)", i, got)
		}
	}
	if n := strings.Count(log.String(), "cannot read the cgroup CPU quota"); n != 1 {
		t.Errorf("logged the read error %d times, want once:\n%s", n, log.String())
	}
}

func TestRuntimeOptionsValidate(t *testing.T) {
	tests := []struct {
		name    string
		o       RuntimeOptions
		wantErr string
	}{
		{"zero value", RuntimeOptions{}, ""},
		{"set", RuntimeOptions{SchedLatency: 5 * time.Millisecond, CPUs: 1.5}, ""},
		{"negative latency", RuntimeOptions{SchedLatency: -1}, "SchedLatency -1ns is negative"},
		{"negative CPUs", RuntimeOptions{CPUs: -1}, "CPUs -1 is not"},
		{"NaN CPUs", RuntimeOptions{CPUs: math.NaN()}, "CPUs NaN is not"},
		{"infinite CPUs", RuntimeOptions{CPUs: math.Inf(1)}, "CPUs +Inf is not"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRuntime(tt.o)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("NewRuntime() error = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "limit: ") {
				t.Errorf("NewRuntime() error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestRuntimeRun runs the sampling loop in a synctest bubble with a scripted
// runtime: NaN before the second reading, the computed value after each
// interval, NaN again once Run returns.
func TestRuntimeRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		sc := &script{readings: []runtimeReading{
			sched(),
			sched(0, 0, 50, 0, 50),         // p99 500us: 0.5
			sched(0, 0, 50, 0, 50, 0, 100), // +100 over 2ms: 1
		}}
		r, err := newRuntime(RuntimeOptions{CPUs: 1}, runtimeEnv{newReader: sc.reader, readFile: files{}.read})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- r.Run(ctx, 100*time.Millisecond) }()
		synctest.Wait()
		if got := r.Saturation(); !math.IsNaN(got) {
			t.Errorf("before the first interval: Saturation() = %v, want NaN", got)
		}
		if err := r.Run(ctx, time.Second); err == nil || !strings.Contains(err.Error(), "already running") {
			t.Errorf("second Run: error %v, want already running", err)
		}
		for i, want := range []float64{0.5, 1} {
			time.Sleep(100 * time.Millisecond)
			synctest.Wait()
			if got := r.Saturation(); got != want {
				t.Errorf("after interval %d: Saturation() = %v, want %v", i+1, got, want)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run returned %v, want nil", err)
		}
		if got := r.Saturation(); !math.IsNaN(got) {
			t.Errorf("after Run returned: Saturation() = %v, want NaN", got)
		}
	})
}

func TestRuntimeRunBadInterval(t *testing.T) {
	r, err := NewRuntime(RuntimeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{0, -time.Second} {
		if err := r.Run(t.Context(), d); err == nil || !strings.Contains(err.Error(), "not positive") {
			t.Errorf("Run(ctx, %v) = %v, want an error", d, err)
		}
	}
}

// TestRuntimeSaturatedByCPUBurn reads the real runtime: goroutines that
// burn CPU in 1ms slices and yield, four per P, wait about 3ms for a P each
// time they yield, and keep every P busy. Both measures must read
// saturated. (Whether an idle interval reads low depends on the machine:
// the closing GC's mark phase falls inside the interval, and on a loaded
// machine it stretches.)
func TestRuntimeSaturatedByCPUBurn(t *testing.T) {
	if testing.Short() {
		t.Skip("burns all CPUs for a third of a second or more")
	}
	read := newMetricsReader()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	for range 4 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				for end := time.Now().Add(time.Millisecond); time.Now().Before(end); {
				}
				runtime.Gosched()
			}
		})
	}

	// All readings are taken while burning, so that the intervals between
	// them hold nothing else. The scheduling interval ends before the
	// closing GC, whose workers' own quick wake-ups would dilute it. On a
	// loaded machine the burners get less CPU and yield less often: measure
	// until enough yields were recorded (the runtime records one in eight).
	var prev, mid, cur runtimeReading
	runtime.GC() // refresh the CPU classes
	read(&prev)
	deadline := time.Now().Add(10 * time.Second)
	for n := uint64(0); n < 100; n = events(prev, mid) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d scheduling events recorded in 10s of burning", n)
		}
		time.Sleep(100 * time.Millisecond) // the measured period, not synchronisation
		read(&mid)
	}
	runtime.GC()
	read(&cur)

	if got := schedSaturation(prev, mid, time.Millisecond); got < 0.95 {
		t.Errorf("burning: scheduling saturation %v over %d events, want >= 0.95", got, events(prev, mid))
	}
	if busy, ok := cpuBusy(prev, cur, 0); !ok || busy < 0.9 {
		t.Errorf("burning: CPU busy %v, %v; want >= 0.9, true", busy, ok)
	}
}

// events is the number of scheduling latencies recorded between two
// readings.
func events(prev, cur runtimeReading) uint64 {
	var n uint64
	for i := range min(len(prev.sched), len(cur.sched)) {
		n += cur.sched[i] - prev.sched[i]
	}
	return n
}

// BenchmarkSample is the sampler's cost per interval with the real runtime:
// one runtime/metrics read and the computation.
func BenchmarkSample(b *testing.B) {
	s := newSampler(RuntimeOptions{CPUs: 1}, runtimeEnv{readFile: files{}.read}, newMetricsReader(), time.Second)
	now := time.Unix(0, 0)
	s.start(now)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Second)
		s.sample(now)
	}
}
