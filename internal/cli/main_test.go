package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/app"
	"github.com/sluicehq/sluice/internal/demo"
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

func TestServeCutsAtShutdownTimeout(t *testing.T) {
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf("server: {listen: %q, drainDelay: 100ms, shutdownTimeout: 700ms}\nadmin: {listen: %q}\n", addr, adminAddr))
	p := startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	cut := make(chan int, 1)
	go func() { code, _, _ := get("http://"+addr+"/?cpu=1&sleep=10000", 15*time.Second); cut <- code }()
	waitStats(t, adminAddr, func(s stats) bool { return s.Admission.Inflight == 1 })
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.ExitCode(t, 10*time.Second); code == 0 {
		t.Errorf("exit code after a cut drain: got 0, want non-zero")
	}
	if code := <-cut; code == http.StatusOK {
		t.Errorf("the request outliving shutdownTimeout got 200, want it cut")
	}
}

// Probes bypass a saturated, queue-full server, and the admin endpoints
// report the limiter's state meanwhile.
func TestServeProbesAndStatsUnderSaturation(t *testing.T) {
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server:
  listen: %q
  drainDelay: 100ms
  shutdownTimeout: 1s
  maxConcurrentRequests: 2
  backpressure: {algorithm: fixed, queueSize: 2, queueTimeout: 20s}
admin: {listen: %q}
`, addr, adminAddr))
	startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	for range 4 { // two in flight, two queued: they never finish within the test
		go get("http://"+addr+"/?cpu=0&sleep=30000", 40*time.Second)
	}
	waitStats(t, adminAddr, func(s stats) bool { return s.Admission.Inflight == 2 && s.Admission.Queued == 2 })
	code, h, _ := get("http://"+addr+"/", 5*time.Second)
	if code != http.StatusServiceUnavailable || h.Get("Sluice-Shed") != "queue-full" || h.Get("Retry-After") == "" {
		t.Fatalf("a request to the full server: got %d, Sluice-Shed %q, Retry-After %q; want 503 queue-full with Retry-After",
			code, h.Get("Sluice-Shed"), h.Get("Retry-After"))
	}
	for _, path := range []string{"/__sluice/health", "/__sluice/ready"} {
		if code, _, _ := get("http://"+addr+path, 2*time.Second); code != http.StatusOK {
			t.Errorf("%s on a saturated server: got %d, want 200", path, code)
		}
	}
	st := waitStats(t, adminAddr, func(s stats) bool { return s.Admission.Shed[admission.ReasonQueueFull] >= 1 })
	if st.Admission.Limit != 2 {
		t.Errorf("/stats limit: got %d, want 2", st.Admission.Limit)
	}
	_, _, metrics := get("http://"+adminAddr+"/metrics", 2*time.Second)
	for _, want := range []string{"sluice_inflight 2", "sluice_queued 2", "sluice_limit 2", `sluice_shed_total{reason="queue-full"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// sluice demo runs its whole job, end to end, on a small scale.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real worker processes under load for several seconds")
	}
	t.Setenv(runMainEnv, "1") // the demo's workers are this test binary
	var out, errOut testutil.Buffer
	code := dispatch(context.Background(), Extensions{}, []string{"demo", "-workers", "2", "-cpu", "2ms", "-step", "1s", "-loads", "1,3", "-timeout", "500ms"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, errOut.String())
	}
	text := out.String()
	for _, want := range []string{"measured capacity:", "(1x)", "(3x)", "sluice", "no admission", "goodput"} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
}

// Static upstreams: sluice does not start them, health-checks them, and
// dispatches only to those that are up.
func TestServeUpstreams(t *testing.T) {
	var upstreams []string
	stops := map[string]context.CancelFunc{}
	for i := range 2 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			demo.ServeWorker(ctx, ln, &demo.App{Work: demo.NewWork(100), Name: fmt.Sprint("upstream ", i)})
			close(done)
		}()
		stop := func() { cancel(); <-done }
		t.Cleanup(stop)
		stops[ln.Addr().String()] = stop
		upstreams = append(upstreams, ln.Addr().String())
	}
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: %q}
upstreams:
  servers: [{address: %q, concurrency: 1}, {address: %q, concurrency: 1}]
  healthCheck: {path: %s, interval: 50ms, timeout: 1s, fails: 1, passes: 1}
`, addr, adminAddr, upstreams[0], upstreams[1], demo.ReadyPath))
	startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	waitStats(t, adminAddr, func(s stats) bool { return s.Proxy != nil && s.Proxy.Slots == 2 })
	seen := map[string]bool{}
	for range 20 {
		code, _, body := get("http://"+addr+"/?cpu=0", 5*time.Second)
		if code != http.StatusOK {
			t.Fatalf("got %d %q, want 200 from an upstream", code, body)
		}
		seen[body[strings.Index(body, "upstream "):][:10]] = true
	}
	if len(seen) != 2 {
		t.Errorf("requests reached %v, want both upstreams", seen)
	}
	stops[upstreams[0]]()
	waitStats(t, adminAddr, func(s stats) bool { return s.Proxy.Slots == 1 })
	for range 10 {
		if code, _, body := get("http://"+addr+"/?cpu=0", 5*time.Second); code != http.StatusOK || !strings.Contains(body, "upstream 1") {
			t.Fatalf("with upstream 0 down: got %d %q, want 200 from upstream 1", code, body)
		}
	}
}

// POST /workers/restart on the admin listener replaces every worker, one at
// a time, while requests keep being served.
func TestServeAdminRollingRestart(t *testing.T) {
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: %q}
workers:
  command: [%q, demo-worker]
  count: 2
  readyPath: %s
  env: {%s: "1"}
`, addr, adminAddr, os.Args[0], demo.ReadyPath, runMainEnv))
	startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	before := waitStats(t, adminAddr, func(s stats) bool { return len(s.Workers) == 2 })
	oldPIDs := map[int]bool{}
	for _, w := range before.Workers {
		oldPIDs[w.PID] = true
	}
	stop := make(chan struct{})
	failures := make(chan string, 1000)
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if code, _, body := get("http://"+addr+"/?cpu=1", 10*time.Second); code != http.StatusOK {
					failures <- fmt.Sprintf("%d %s", code, body)
				}
			}
		})
	}
	resp, err := http.Post("http://"+adminAddr+"/workers/restart", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /workers/restart: got %d, want 202", resp.StatusCode)
	}
	waitStats(t, adminAddr, func(s stats) bool {
		ready := 0
		for _, w := range s.Workers {
			if oldPIDs[w.PID] {
				return false
			}
			if w.State == "ready" {
				ready++
			}
		}
		return ready == 2
	})
	close(stop)
	wg.Wait()
	close(failures)
	for f := range failures {
		t.Errorf("a request failed during the rolling restart: %s", f)
	}
}

// A workers section without a command runs the command after --, and a key
// that has no effect is logged as a warning at start.
func TestServeCommandAfterDashDash(t *testing.T) {
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms, backpressure: {minLimit: 3}}
admin: {listen: "off"}
workers:
  count: 1
  readyPath: %s
  env: {%s: "1"}
`, addr, demo.ReadyPath, runMainEnv))
	p := startSluice(t, "serve", "-c", cfg, "--", os.Args[0], "demo-worker")
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get("http://"+addr+"/?cpu=0", 5*time.Second); code != http.StatusOK || !strings.Contains(body, "Rendered") {
		t.Errorf("got %d %q, want 200 from the worker started from the command line", code, body)
	}
	out := p.Out.String()
	for _, want := range []string{"config: a key has no effect", "at=" + cfg + ":1", "key=server.backpressure.minLimit"} {
		if !strings.Contains(out, want) {
			t.Errorf("the log at start lacks %q:\n%s", want, out)
		}
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.ExitCode(t, 10*time.Second); code != 0 {
		t.Errorf("exit code after a drain: got %d, want 0", code)
	}
}

// A worker command in the file and after -- is refused before anything
// starts: one of the two would be silently ignored.
func TestServeRefusesTwoCommands(t *testing.T) {
	cfg := writeConfig(t, "admin: {listen: \"off\"}\nworkers:\n  count: 1\n  command: node a.js\n")
	var out, errOut bytes.Buffer
	code := runServe(context.Background(), Extensions{}, []string{"-c", cfg, "--", "node", "b.js"}, &out, &errOut)
	if want := cfg + ":4: workers.command: is also given after -- on the command line"; code != 1 || !strings.Contains(errOut.String(), want) {
		t.Errorf("got exit %d, stderr %q; want 1 and %q", code, errOut.String(), want)
	}
}
