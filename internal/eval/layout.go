package eval

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// Layout says which CPUs the processes of a run execute on. A front is
// judged by the goodput its workers deliver; when the front, the load
// generator and the workers share every CPU, a front that spends more CPU
// takes it from the workers, and the comparison measures the fronts' CPU as
// much as their scheduling. Pinned, the workers have CPUs of their own and
// the front and the generator share the rest: what a deployment with a
// core set aside for the front looks like, and the layout in which a
// front's dispatching alone decides how busy the workers are. Shared (nil
// sets) is what a pod whose containers share a CPU quota sees.
type Layout struct {
	// Workers are the CPUs the workers run on; nil: any.
	Workers []int
	// Front are the CPUs of the harness (the load generator) and every
	// front it starts (sluice, nginx, HAProxy, the round-robin proxy);
	// nil: any.
	Front []int
}

// Layouts of the -layout flag.
const (
	LayoutPinned = "pinned"
	LayoutShared = "shared"
)

// SplitCPUs returns the pinned layout over cpus: the upper half (at least
// one) for the workers, the rest for the front and the generator. With
// fewer than two CPUs there is nothing to split and it returns the shared
// layout.
func SplitCPUs(cpus []int) Layout {
	if len(cpus) < 2 {
		return Layout{}
	}
	front := len(cpus) - max(len(cpus)/2, 1)
	return Layout{Front: cpus[:front:front], Workers: cpus[front:]}
}

// Pinned reports whether the layout sets CPUs apart.
func (l Layout) Pinned() bool { return len(l.Workers) > 0 }

func (l Layout) String() string {
	if !l.Pinned() {
		return LayoutShared
	}
	return fmt.Sprintf("%s (workers on CPU %s, front and generator on CPU %s)", LayoutPinned, cpuList(l.Workers), cpuList(l.Front))
}

// workerArgv returns argv run on the workers' CPUs: through taskset, which
// sets the affinity and then executes argv in the same process, so the
// process's PID, signals and exit are argv's own.
func (l Layout) workerArgv(argv []string) []string {
	if !l.Pinned() {
		return argv
	}
	return append([]string{"taskset", "--cpu-list", cpuList(l.Workers)}, argv...)
}

// cpuList writes cpus as taskset's list: "1", "2,3".
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// AllowedCPUs returns the CPUs this process may run on, in order.
func AllowedCPUs() ([]int, error) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return nil, fmt.Errorf("eval: reading the CPU affinity: %w", err)
	}
	var cpus []int
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus, nil
}

// PinProcess restricts every thread of this process to cpus. Threads
// created later inherit their creator's set, and children their parent's,
// so the fronts the harness starts afterwards run on cpus too.
func PinProcess(cpus []int) error {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("eval: pinning the harness: %w", err)
	}
	for _, t := range tasks {
		tid, err := strconv.Atoi(t.Name())
		if err != nil {
			continue
		}
		// A thread that exited since the listing is no longer there to pin.
		if err := unix.SchedSetaffinity(tid, &set); err != nil && err != unix.ESRCH {
			return fmt.Errorf("eval: pinning the harness's thread %d: %w", tid, err)
		}
	}
	return nil
}
