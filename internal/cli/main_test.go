package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/testutil"
)

// The test binary doubles as the sluice binary: with this variable set it
// runs main's command dispatch instead of the tests. Integration tests start
// it as a real process, and sluice's supervisor re-executes it as a worker
// (the variable is inherited).
const runMainEnv = "SLUICE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	supervisor.GuardMain() // sluice's workers run under the binary as their guard
	if os.Getenv(runMainEnv) == "1" {
		os.Exit(Main(Extensions{}))
	}
	os.Exit(m.Run())
}

// startSluice runs this test binary as `sluice <args>` (see runMainEnv);
// cleanup kills it if the test has not stopped it.
func startSluice(t *testing.T, args ...string) *testutil.Process {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return testutil.StartProcess(t, cmd, 0)
}

// writeConfig and rewrite are testutil's, by their short names here.
var (
	writeConfig = testutil.WriteConfig
	rewrite     = testutil.Rewrite
)

// freeAddr returns an address on 127.0.0.1 for a sluice process to listen
// on (racy: see testutil.FreeAddr).
func freeAddr(t *testing.T) string { return testutil.FreeAddr(t) }

// get sends one request and returns its status and body; a transport error
// is status 0.
func get(url string, timeout time.Duration) (int, http.Header, string) {
	c := &http.Client{Timeout: timeout}
	resp, err := c.Get(url)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func TestServeDrainsOnSIGTERM(t *testing.T) {
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("server: {listen: %q, drainDelay: 1s, shutdownTimeout: 5s}\nadmin: {listen: %q}\n", addr, adminAddr))
	p := startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		code int
		body string
	}
	inflight := make(chan answer, 1)
	go func() {
		code, _, body := get("http://"+addr+"/?cpu=1&sleep=1500", 10*time.Second)
		inflight <- answer{code, body}
	}()
	waitStats(t, adminAddr, func(s stats) bool { return s.Admission.Inflight == 1 })
	p.Cmd.Process.Signal(syscall.SIGTERM)
	// The signal is delivered asynchronously; readiness must turn 503 well
	// within the drain delay, while the listener still accepts.
	for deadline := time.Now().Add(500 * time.Millisecond); ; {
		code, _, _ := get("http://"+addr+"/__sluice/ready", time.Second)
		if code == http.StatusServiceUnavailable {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("readiness 500ms into the drain: got %d, want 503", code)
		}
		time.Sleep(10 * time.Millisecond) // polling another process
	}
	a := <-inflight
	if a.code != http.StatusOK || !strings.Contains(a.body, "Rendered") {
		t.Errorf("in-flight request: got %d %q, want it completed with 200", a.code, a.body)
	}
	if code := p.ExitCode(t, 10*time.Second); code != 0 {
		t.Errorf("exit code after a complete drain: got %d, want 0", code)
	}
}

// stats is the admin listener's /stats document.
type stats = app.Stats

// waitStats polls the admin /stats of a running sluice until cond holds.
func waitStats(t *testing.T, adminAddr string, cond func(stats) bool) stats {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st stats
		resp, err := http.Get("http://" + adminAddr + "/stats")
		if err == nil {
			err = jsonDecode(resp.Body, &st)
			resp.Body.Close()
			if err == nil && cond(st) {
				return st
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("admin /stats never met the condition (last: %+v, err %v)", st, err)
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
}

// replaced reports whether s shows n ready workers and none of the old
// PIDs: a rolling restart or a reload's roll has finished.
func replaced(s stats, old map[int]bool, n int) bool {
	ready := 0
	for _, w := range s.Workers {
		if old[w.PID] {
			return false
		}
		if w.State == "ready" {
			ready++
		}
	}
	return ready == n
}

// keepRequesting sends GETs of url from clients goroutines, one after the
// other each, until the returned stop is called; stop waits for them and
// returns what failed (at most the first 100 failures), each as its
// status and body.
func keepRequesting(url string, clients int) (stop func() []string) {
	done := make(chan struct{})
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		failures []string
	)
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if code, _, body := get(url, 10*time.Second); code != http.StatusOK {
					mu.Lock()
					if len(failures) < 100 {
						failures = append(failures, fmt.Sprintf("%d %s", code, body))
					}
					mu.Unlock()
				}
			}
		})
	}
	return func() []string {
		close(done)
		wg.Wait()
		return failures
	}
}
