package supervisor_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
)

func atoi(s string) int {
	n, _ := strconv.Atoi(strings.TrimSpace(s))
	return n
}

// pidBalancer prints each Added worker's PID for the test that runs
// runSupervisorHelper.
type pidBalancer struct{ sup *supervisor.Supervisor }

func (b *pidBalancer) Add(e supervisor.Endpoint) {
	go func() { // Add must not call back into the supervisor
		for _, w := range b.sup.Stats().Workers {
			if w.ID == e.ID {
				fmt.Println("worker", w.PID)
			}
		}
	}()
}
func (b *pidBalancer) Drain(context.Context, int) error { return nil }
func (b *pidBalancer) Remove(int)                       {}

// runSupervisorHelper supervises one worker and prints "worker PID" once it
// is ready; it runs until killed (or roleLifetime).
func runSupervisorHelper() int {
	b := &pidBalancer{}
	o := supervisor.Options{Command: []string{os.Args[0]}, Count: 1, Env: workerEnv()}
	if os.Getenv("SLUICE_TEST_GUARD") == "1" {
		// A guarded worker with a child of its own; the child's PID is
		// printed through Output as "worker ID: child PID".
		o.Guard, o.Output = os.Args[0], os.Stdout
		o.Env = workerEnv("SLUICE_TEST_CHILD=1")
	}
	sup, err := supervisor.New(b, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	b.sup = sup
	ctx, cancel := context.WithTimeout(context.Background(), roleLifetime)
	defer cancel()
	sup.Run(ctx)
	return 0
}

// A supervisor killed with SIGKILL cannot stop its workers; the kernel does,
// through the parent-death signal.
func TestWorkerDiesWithSupervisorKilled(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("parent-death signals are Linux only")
	}
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), "SLUICE_TEST_ROLE=supervisor")
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		helper.Process.Kill()
		helper.Wait()
	})
	pids := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "worker "); ok {
				pids <- atoi(rest)
				return
			}
		}
		close(pids)
	}()
	var pid int
	select {
	case pid = <-pids:
	case <-time.After(eventWait):
		t.Fatalf("the helper reported no worker within %v", eventWait)
	}
	if pid <= 0 || gone(pid) {
		t.Fatalf("worker PID %d: not running before the helper was killed", pid)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	awaitGone(t, pid, eventWait)
}
