//go:build linux

package cpudemand

import (
	"os/exec"
	"slices"
	"testing"
	"time"
)

// start runs a shell command and returns its process ID; the process is
// killed when the test ends.
func start(t *testing.T, script string) int {
	t.Helper()
	cmd := exec.Command("sh", "-c", script)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd.Process.Pid
}

// median of n readings of m, one every interval of real time: the
// kernel's counters move with real time, so this is the measurement
// itself, not a wait for something to happen.
func median(t *testing.T, m *Meter, n int, interval time.Duration) float64 {
	t.Helper()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	m.Read(time.Now())
	var ds []float64
	for len(ds) < n {
		now := <-tick.C
		if d, ok := m.Read(now); ok {
			ds = append(ds, d)
		} else if len(ds) == 0 && now.Sub(m.scanAt) > 3*RescanEvery {
			t.Fatal("no reading of a live single-threaded process")
		}
	}
	slices.Sort(ds)
	return ds[n/2]
}

// A real busy loop wants a whole CPU, however busy the machine (time
// waiting for a CPU after a preemption counts); a real sleeping process
// wants none. The kernel adds a wait to the counters only when it ends,
// so a reading taken while the loop waits falls short: on a machine
// loaded ten times over, 0.6-0.8 over 200 ms.
func TestRealProcesses(t *testing.T) {
	busy := New("/proc", start(t, "while :; do :; done"))
	idle := New("/proc", start(t, "exec sleep 60"))
	if d := median(t, busy, 5, 200*time.Millisecond); d < 0.5 {
		t.Errorf("a busy loop's demand = %.2f; want near 1", d)
	}
	if d := median(t, idle, 5, 200*time.Millisecond); d > 0.05 {
		t.Errorf("a sleeping process's demand = %.2f; want near 0", d)
	}
}

// BenchmarkRead is the cost of one reading of a real single-threaded
// process: two small files, and a rescan of its tree once a second.
func BenchmarkRead(b *testing.B) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	m := New("/proc", cmd.Process.Pid)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(100 * time.Millisecond) // a window apart: a rescan every tenth
		m.Read(now)
	}
}
