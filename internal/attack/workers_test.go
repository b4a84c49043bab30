package attack

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// faultyWorkers is a workers section of n demo workers with their fault
// paths on (/__fault/loop never answers, /__fault/exit kills the worker).
func faultyWorkers(n int) string {
	return DemoWorkers(n) + "  env: {SLUICE_DEMO_FAULTS: \"1\"}\n"
}

// workerInfo is one worker of the admin /stats supervisor section.
type workerInfo struct {
	ID    int
	PID   int
	State string
	Exit  string
}

// supervisorStats reads the supervisor section of /stats.
func supervisorStats(t *testing.T, st Stats) (workers []workerInfo, exits int) {
	t.Helper()
	sup, _ := st.Raw["supervisor"].(map[string]any)
	if sup == nil {
		t.Fatalf("/stats has no supervisor section")
	}
	n, _ := sup["exits"].(float64)
	ws, _ := sup["workers"].([]any)
	for _, w := range ws {
		m, _ := w.(map[string]any)
		id, _ := m["id"].(float64)
		pid, _ := m["pid"].(float64)
		state, _ := m["state"].(string)
		exit, _ := m["exit"].(string)
		workers = append(workers, workerInfo{ID: int(id), PID: int(pid), State: state, Exit: exit})
	}
	return workers, int(n)
}

// A worker stuck in an endless loop is answered 504 at the timeout, taken
// out of rotation when it has been silent for the hang grace as well
// (nothing more is sent to it), killed and replaced by the supervisor.
func TestHungWorkerIsKilledAndReplaced(t *testing.T) {
	s := Start(t, `server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
proxy: {timeout: 1s}
`+faultyWorkers(2))
	if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/__fault/loop"); code != http.StatusGatewayTimeout {
		t.Fatalf("the endless loop: got %d, want 504", code)
	}
	// Default hang grace: 10 s past the timeout. The killed worker (ID 1
	// or 2) is forgotten once its slot has a successor.
	st := s.WaitStats(t, "the hung worker killed and replaced", func(st Stats) bool {
		ws, exits := supervisorStats(t, st)
		ready := 0
		for _, w := range ws {
			if w.State == "ready" {
				ready++
			}
		}
		return exits == 1 && ready == 2 && len(ws) == 2
	})
	if hung, _ := st.Raw["proxy"].(map[string]any)["hung"].(float64); hung != 1 {
		t.Errorf("proxy stats: got %v hung, want 1", hung)
	}
	if out := s.Output(1 << 20); !strings.Contains(out, "killing worker") || !strings.Contains(out, "reason=\"hung") {
		t.Errorf("sluice's log lacks the kill of the hung worker")
	}
	for range 4 {
		if code, body := testutil.Get(t.Context(), "http://"+s.Addr+"/?cpu=0"); code != http.StatusOK {
			t.Errorf("after the replacement: got %d %q, want 200", code, body)
		}
	}
	s.Stop(t)
}

// A request that kills its worker gets 502 and is not sent to a second
// one: one poisonous request costs one worker, whatever its method.
func TestPoisonRequestKillsOneWorker(t *testing.T) {
	s := Start(t, `server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
`+faultyWorkers(2))
	if code, _ := testutil.Get(t.Context(), "http://"+s.Addr+"/__fault/exit"); code != http.StatusBadGateway {
		t.Errorf("the poisonous GET: got %d, want 502", code)
	}
	// Had the request gone on to the second worker, it would have died
	// before the 502: both exits would be counted by the time two workers
	// are ready again.
	st := s.WaitStats(t, "the dead worker replaced", func(st Stats) bool {
		ws, exits := supervisorStats(t, st)
		ready := 0
		for _, w := range ws {
			if w.State == "ready" {
				ready++
			}
		}
		return exits >= 1 && ready == 2
	})
	if ws, exits := supervisorStats(t, st); exits != 1 {
		t.Errorf("got %d worker exits, want 1: %+v", exits, ws)
	}
	s.Stop(t)
}

// When sluice is killed with SIGKILL, a worker started through a shell
// dies with its child (the server itself): the guard kills the worker's
// whole process group. Without it the shell died of its parent-death
// signal and the server lived on, reparented, holding its port.
func TestGrandchildrenDieWithSluice(t *testing.T) {
	requireLinux(t)
	s := Start(t, fmt.Sprintf(`server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
workers:
  command: [sh, -c, %q]
  count: 1
  concurrency: 1
  readyPath: /__worker/ready
`, sluiceBin+" demo-worker; exit 1"))
	ws, _ := supervisorStats(t, s.Stats(t))
	if len(ws) != 1 || ws[0].PID <= 0 {
		t.Fatalf("got workers %+v, want one with a PID", ws)
	}
	group := processGroup(t, ws[0].PID)
	if len(group) < 3 {
		t.Fatalf("worker group %d holds %v, want the guard, the shell and the server", ws[0].PID, group)
	}
	syscall.Kill(s.PID, syscall.SIGKILL)
	<-s.p.Done()
	deadline := time.Now().Add(bound)
	for {
		left := 0
		for _, pid := range group {
			if running(pid) {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of the worker's processes %v still run %v after sluice was killed", left, group, bound)
		}
		time.Sleep(10 * time.Millisecond) // polling processes that are not ours
	}
}

// processGroup lists the live processes of process group pgid.
func processGroup(t *testing.T, pgid int) []int {
	t.Helper()
	stats, err := filepath.Glob("/proc/[0-9]*/stat")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range stats {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // gone meanwhile
		}
		i := strings.LastIndexByte(string(b), ')')
		fields := strings.Fields(string(b[i+1:])) // state ppid pgrp ...
		if len(fields) < 3 || fields[2] != strconv.Itoa(pgid) || fields[0] == "Z" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(f)))
		pids = append(pids, pid)
	}
	return pids
}

// running reports whether pid exists and is not a zombie.
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i > 0 && i+2 < len(b) && b[i+2] != 'Z'
}
