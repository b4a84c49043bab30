package supervisor_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/testutil"
)

// Integration tests: real processes (the test binary as worker, see
// main_test.go) on 127.0.0.1 or unix sockets. Every wait is bounded.

const eventWait = 20 * time.Second // generous: the machine is shared and noisy

type realRun struct {
	sup    *supervisor.Supervisor
	bal    *testBalancer
	out    *testutil.Buffer
	cancel context.CancelFunc
	runErr chan error
}

// runReal starts a Supervisor of test-binary workers and stops it (with
// ctx cancellation) when the test ends.
func runReal(t *testing.T, o supervisor.Options) *realRun {
	t.Helper()
	if runtime.GOOS == "windows" {
		t.Skip("worker processes need a unix system")
	}
	r := &realRun{bal: newTestBalancer(), out: &testutil.Buffer{}, runErr: make(chan error, 1)}
	o.Command = []string{os.Args[0]}
	if o.Env == nil {
		o.Env = workerEnv()
	}
	o.Output = r.out
	if o.StopTimeout == 0 {
		o.StopTimeout = 5 * time.Second
	}
	o.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sup, err := supervisor.New(r.bal, o)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r.sup = sup
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.runErr <- sup.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-r.runErr:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(eventWait):
			t.Errorf("Run did not return within %v of cancellation", eventWait)
		}
	})
	return r
}

// testWriter sends log lines to t.Log, so that they show only on failure.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func get(t *testing.T, e supervisor.Endpoint, path string) string {
	t.Helper()
	c := clientFor(e)
	defer c.CloseIdleConnections()
	resp, err := c.Get("http://worker" + path)
	if err != nil {
		t.Fatalf("GET %s from worker %d: %v", path, e.ID, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s from worker %d: got %d, want 200", path, e.ID, resp.StatusCode)
	}
	return string(b)
}

// gone reports whether pid no longer runs: it does not exist, or it is a
// zombie waiting for a parent that is not us.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return os.IsNotExist(err)
	}
	// The state follows the parenthesised command name.
	i := bytes.LastIndexByte(stat, ')')
	return i > 0 && i+2 < len(stat) && stat[i+2] == 'Z'
}

// awaitGone polls pid until it is gone, for at most d.
func awaitGone(t *testing.T, pid int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !gone(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("process %d still running after %v", pid, d)
		}
		time.Sleep(10 * time.Millisecond) // polling a process we do not own: nothing to wait on
	}
}

func workerByID(sup *supervisor.Supervisor, id int) supervisor.WorkerInfo {
	for _, w := range sup.Stats().Workers {
		if w.ID == id {
			return w
		}
	}
	return supervisor.WorkerInfo{}
}

// awaitReady polls worker id's state until it is ready, for at most d: a
// worker is ready just after the Balancer has it (worker.go), so a test
// that saw its Add may read it still warming.
func awaitReady(t *testing.T, sup *supervisor.Supervisor, id int, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for workerByID(sup, id).State != supervisor.StateReady {
		if time.Now().After(deadline) {
			t.Fatalf("worker %d not ready %v after the Balancer had it: %+v", id, d, workerByID(sup, id))
		}
		time.Sleep(5 * time.Millisecond) // nothing signals the state to a test
	}
}

func TestRealWorkersStartAndServe(t *testing.T) {
	r := runReal(t, supervisor.Options{Count: 2, ReadyPath: "/ready", WarmupRequests: 2})
	r.bal.await(t, "add 1", eventWait)
	r.bal.await(t, "add 2", eventWait)
	awaitReady(t, r.sup, 1, eventWait)
	awaitReady(t, r.sup, 2, eventWait)
	if !r.sup.Ready() {
		t.Fatalf("Ready: got false, want true")
	}
	for id := 1; id <= 2; id++ {
		r.bal.mu.Lock()
		e := r.bal.eps[id].Endpoint
		r.bal.mu.Unlock()
		if got, want := get(t, e, "/"), "worker "+strconv.Itoa(id); got != want {
			t.Errorf("worker %d answered %q, want %q", id, got, want)
		}
		if w := workerByID(r.sup, id); w.PID <= 0 || w.State != supervisor.StateReady || !strings.HasPrefix(w.Addr, "127.0.0.1:") {
			t.Errorf("Stats for worker %d: got %+v, want a PID, ready, on 127.0.0.1", id, w)
		}
	}
	// Output is copied line by line, with the worker's prefix.
	deadline := time.Now().Add(eventWait)
	for _, want := range []string{"worker 1: hello from worker 1\n", "worker 2: worker 2 says hi on stderr\n"} {
		for !strings.Contains(r.out.String(), want) {
			if time.Now().After(deadline) {
				t.Fatalf("output %q lacks %q", r.out.String(), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
}

// A worker that dies is restarted; what it left running in its process
// group is killed (its child here), so nothing is orphaned.
func TestRealKilledWorkerIsRestarted(t *testing.T) {
	r := runReal(t, supervisor.Options{Count: 1, ReadyPath: "/ready", Env: workerEnv("SLUICE_TEST_CHILD=1")})
	r.bal.await(t, "add 1", eventWait)
	pid := workerByID(r.sup, 1).PID
	child := childPIDs(t, r.out, 1)[0]
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill worker 1: %v", err)
	}
	r.bal.await(t, "remove 1", eventWait)
	r.bal.await(t, "add 2", eventWait)
	st := r.sup.Stats()
	if st.Exits != 1 || len(st.Workers) != 1 || st.Workers[0].ID != 2 || st.Workers[0].Restarts != 1 {
		t.Errorf("Stats: got %+v, want exits 1 and worker 2 restarted once", st)
	}
	if !gone(pid) {
		t.Errorf("killed worker %d: still running", pid)
	}
	awaitGone(t, child, eventWait)
}

func TestRealRollingRestartLosesNoRequest(t *testing.T) {
	r := runReal(t, supervisor.Options{Count: 2, ReadyPath: "/ready", WarmupRequests: 3, WarmupPath: "/?ms=1"})
	r.bal.await(t, "add 1", eventWait)
	r.bal.await(t, "add 2", eventWait)
	oldPIDs := []int{workerByID(r.sup, 1).PID, workerByID(r.sup, 2).PID}

	// Two clients keep both workers busy with 5 ms "renders" until the
	// restart ends, bounded in count and time.
	ctx, cancel := context.WithTimeout(context.Background(), 2*eventWait)
	defer cancel()
	var sent, failed atomic.Int64
	var byNew atomic.Int64
	var failures sync.Map
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil && sent.Load() < 20000 {
				ep, err := r.bal.acquire(ctx)
				if err != nil {
					return
				}
				sent.Add(1)
				body, err := fetch(ctx, ep, "/?ms=5")
				r.bal.release(ep)
				switch {
				case err != nil:
					failed.Add(1)
					failures.Store(err.Error(), true)
				case body == "worker 3" || body == "worker 4":
					byNew.Add(1)
				}
			}
		})
	}
	time.Sleep(50 * time.Millisecond) // let traffic flow before the restart: not synchronisation
	err := r.sup.RollingRestart(ctx)
	// A few more requests on the new workers, then stop.
	for target := sent.Load() + 20; sent.Load() < target && ctx.Err() == nil; {
		time.Sleep(5 * time.Millisecond)
	}
	cancel()
	wg.Wait()
	if err != nil {
		t.Fatalf("RollingRestart: %v", err)
	}
	if n := failed.Load(); n > 0 {
		var msgs []string
		failures.Range(func(k, _ any) bool { msgs = append(msgs, k.(string)); return true })
		t.Errorf("%d of %d requests failed during the rolling restart: %v", n, sent.Load(), msgs)
	}
	if byNew.Load() == 0 {
		t.Errorf("no request reached the new workers 3 and 4 (of %d sent)", sent.Load())
	}
	t.Logf("%d requests during the rolling restart, %d failed", sent.Load(), failed.Load())
	for _, pid := range oldPIDs {
		if !gone(pid) {
			t.Errorf("old worker %d: still running after the rolling restart", pid)
		}
	}
}

// fetch is a GET that treats a cancelled ctx as no failure of the worker.
func fetch(ctx context.Context, ep *tbEndpoint, path string) (string, error) {
	req, _ := http.NewRequestWithContext(context.WithoutCancel(ctx), http.MethodGet, "http://worker"+path, nil)
	resp, err := ep.client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = errors.New(resp.Status)
	}
	return string(b), err
}

func TestRealShutdownLeavesNoProcess(t *testing.T) {
	r := runReal(t, supervisor.Options{Count: 2, Env: workerEnv("SLUICE_TEST_CHILD=1")})
	r.bal.await(t, "add 1", eventWait)
	r.bal.await(t, "add 2", eventWait)
	var pids []int
	for _, w := range r.sup.Stats().Workers {
		pids = append(pids, w.PID)
	}
	children := childPIDs(t, r.out, 2)

	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	if err := r.sup.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	// Workers are reaped when Shutdown returns: no waiting needed.
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker %d after Shutdown: kill(0) got %v, want ESRCH", pid, err)
		}
	}
	// Their children were in their process groups; they are not ours to
	// reap, so poll.
	for _, pid := range children {
		awaitGone(t, pid, eventWait)
	}
	select {
	case err := <-r.runErr:
		r.runErr <- err // for the cleanup
	case <-time.After(eventWait):
		t.Errorf("Run did not return after Shutdown")
	}
}

// childPIDs waits for n "child PID" lines in out.
func childPIDs(t *testing.T, out *testutil.Buffer, n int) []int {
	t.Helper()
	deadline := time.Now().Add(eventWait)
	for {
		var pids []int
		for _, line := range strings.Split(out.String(), "\n") {
			if _, rest, ok := strings.Cut(line, ": child "); ok {
				pids = append(pids, atoi(rest))
			}
		}
		if len(pids) >= n {
			return pids
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d child PIDs in %q, want %d", len(pids), out.String(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestRealStubbornWorkerIsKilled(t *testing.T) {
	r := runReal(t, supervisor.Options{Count: 1, StopTimeout: 200 * time.Millisecond, Env: workerEnv("SLUICE_TEST_IGNORE_TERM=1")})
	r.bal.await(t, "add 1", eventWait)
	pid := workerByID(r.sup, 1).PID
	began := time.Now()
	if err := r.sup.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if took := time.Since(began); took < 200*time.Millisecond {
		t.Errorf("Shutdown took %v, want at least StopTimeout (the worker ignores SIGTERM)", took)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("worker after Shutdown: kill(0) got %v, want ESRCH", err)
	}
}

func TestRealUnixSocketMode(t *testing.T) {
	r := runReal(t, supervisor.Options{Count: 1, AddressMode: supervisor.UnixMode, ReadyPath: "/ready"})
	r.bal.await(t, "add 1", eventWait)
	r.bal.mu.Lock()
	e := r.bal.eps[1].Endpoint
	r.bal.mu.Unlock()
	if e.Network != "unix" || !strings.HasSuffix(e.Addr, ".sock") {
		t.Fatalf("endpoint: got %+v, want a unix socket", e)
	}
	dir := filepath.Dir(e.Addr)
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("socket directory %s: got %v %v, want mode 0700", dir, fi.Mode(), err)
	}
	if got := get(t, e, "/"); got != "worker 1" {
		t.Errorf("worker answered %q, want %q", got, "worker 1")
	}
	r.cancel()
	select {
	case err := <-r.runErr:
		r.runErr <- err
	case <-time.After(eventWait):
		t.Fatalf("Run did not return")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("socket directory after Run: got %v, want it removed", err)
	}
}
