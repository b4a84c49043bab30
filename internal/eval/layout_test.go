package eval

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSplitCPUs(t *testing.T) {
	for _, tc := range []struct {
		cpus          []int
		front, worker []int
	}{
		{nil, nil, nil},
		{[]int{0}, nil, nil},
		{[]int{0, 1}, []int{0}, []int{1}},
		{[]int{0, 1, 2}, []int{0, 1}, []int{2}},
		{[]int{2, 3, 6, 7}, []int{2, 3}, []int{6, 7}},
	} {
		l := SplitCPUs(tc.cpus)
		if !slices.Equal(l.Front, tc.front) || !slices.Equal(l.Workers, tc.worker) {
			t.Errorf("SplitCPUs(%v): got front %v, workers %v; want %v, %v", tc.cpus, l.Front, l.Workers, tc.front, tc.worker)
		}
		if l.Pinned() != (tc.worker != nil) {
			t.Errorf("SplitCPUs(%v).Pinned(): got %v", tc.cpus, l.Pinned())
		}
	}
}

func TestLayoutWorkerArgv(t *testing.T) {
	argv := []string{"node", "worker.js"}
	if got := (Layout{}).workerArgv(argv); !slices.Equal(got, argv) {
		t.Errorf("shared: got %q, want %q unchanged", got, argv)
	}
	l := Layout{Front: []int{0}, Workers: []int{2, 3}}
	want := []string{"taskset", "--cpu-list", "2,3", "node", "worker.js"}
	if got := l.workerArgv(argv); !slices.Equal(got, want) {
		t.Errorf("pinned: got %q, want %q", got, want)
	}
	if !strings.HasPrefix(l.String(), LayoutPinned) || (Layout{}).String() != LayoutShared {
		t.Errorf("String: got %q and %q", l.String(), Layout{}.String())
	}
}

// TestPinnedWorkersRunOnTheirCPUs starts a worker through the pinned
// layout and reads its affinity back from the kernel.
func TestPinnedWorkersRunOnTheirCPUs(t *testing.T) {
	if _, err := exec.LookPath("taskset"); err != nil {
		t.Skip("taskset not installed")
	}
	cpus, err := AllowedCPUs()
	if err != nil {
		t.Fatal(err)
	}
	l := SplitCPUs(cpus)
	if !l.Pinned() {
		t.Skipf("%d CPU: nothing to set apart", len(cpus))
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	pool, err := startHopWorkers(ctx, node, 1, t.TempDir(), l)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	status, err := os.ReadFile("/proc/" + strconv.Itoa(pool.Procs[0].PID()) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	want := cpuList(l.Workers)
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			if got := strings.TrimSpace(v); got != want && !(len(l.Workers) > 1 && rangeOf(l.Workers) == got) {
				t.Errorf("worker's Cpus_allowed_list: got %q, want %q", got, want)
			}
			return
		}
	}
	t.Fatal("no Cpus_allowed_list in /proc/PID/status")
}

// rangeOf writes consecutive cpus as the kernel lists them: "2-3".
func rangeOf(cpus []int) string {
	return cpuList(cpus[:1]) + "-" + cpuList(cpus[len(cpus)-1:])
}
