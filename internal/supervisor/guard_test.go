package supervisor_test

import (
	"bufio"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
)

// A supervisor killed with SIGKILL takes down its guarded workers' whole
// process groups: the worker's own child too, which the parent-death
// signal alone never reaches (an `sh -c` or `npm start` worker's server).
func TestGuardKillsGrandchildrenWithSupervisorKilled(t *testing.T) {
	helper := exec.Command(os.Args[0])
	helper.Env = append(os.Environ(), "SLUICE_TEST_ROLE=supervisor", "SLUICE_TEST_GUARD=1", "GORACE=atexit_sleep_ms=0")
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
	type pids struct{ worker, child int }
	found := make(chan pids, 1)
	go func() {
		var p pids
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if _, rest, ok := strings.Cut(line, ": child "); ok {
				p.child = atoi(rest)
			} else if rest, ok := strings.CutPrefix(line, "worker "); ok && !strings.Contains(rest, ":") {
				p.worker = atoi(rest)
			}
			if p.worker > 0 && p.child > 0 {
				found <- p
				break
			}
		}
		for sc.Scan() { // keep the helper's stdout drained
		}
	}()
	var p pids
	select {
	case p = <-found:
	case <-time.After(eventWait):
		t.Fatalf("the helper reported no guarded worker and child within %v", eventWait)
	}
	if gone(p.worker) || gone(p.child) {
		t.Fatalf("worker %d or child %d not running before the helper was killed", p.worker, p.child)
	}
	if err := helper.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	helper.Wait()
	awaitGone(t, p.child, eventWait)
	awaitGone(t, p.worker, eventWait)
}

// A guarded worker serves, its output reaches Output, and the supervisor
// sees its command's own exit: the guard lets signals through to the
// command and dies the same way.
func TestGuardedWorkerExitsAsItsCommand(t *testing.T) {
	r := runReal(t, supervisor.Options{Count: 1, Guard: os.Args[0], BackoffMin: time.Hour, BackoffMax: time.Hour})
	r.bal.await(t, "add 1", eventWait)
	r.bal.mu.Lock()
	e := r.bal.eps[1].Endpoint
	r.bal.mu.Unlock()
	if got := get(t, e, "/"); got != "worker 1" {
		t.Errorf("got %q from the guarded worker, want %q", got, "worker 1")
	}
	if n := r.sup.Signal(syscall.SIGHUP); n != 1 { // the test worker does not catch it: it dies of it
		t.Fatalf("signalled %d workers, want 1", n)
	}
	r.bal.await(t, "remove 1", eventWait)
	w := workerByID(r.sup, 1)
	want := "signal: hangup"
	if signal.Ignored(syscall.SIGHUP) {
		// Started under nohup: the guard inherited SIGHUP ignored, cannot
		// die of it, and exits as a shell would report it.
		want = "exit status 129"
	}
	if w.Exit != want {
		t.Errorf("got exit %q, want %q", w.Exit, want)
	}
	if !strings.Contains(r.out.String(), "worker 1: hello from worker 1\n") {
		t.Errorf("output %q lacks the worker's stdout", r.out.String())
	}
}
