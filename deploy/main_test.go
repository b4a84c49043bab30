package deploy

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// bound caps every wait on a sluice process: generous for two loaded
// cores, short enough that a hang fails the test instead of stalling it.
const bound = 30 * time.Second

// workerEnv, set to 1, makes the test binary a worker (see runWorker).
const workerEnv = "SLUICE_DEPLOY_TEST_WORKER"

func TestMain(m *testing.M) {
	if os.Getenv(workerEnv) == "1" {
		runWorker()
		return
	}
	code := m.Run()
	if dir := binDir(); dir != "" {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// runWorker is a worker for sluice to supervise: it answers /healthz, and
// /hang never, and it ignores SIGTERM, so that stopping it takes the
// SIGKILL at the end of the worker's budget: the worst case of a shutdown.
func runWorker() {
	signal.Ignore(syscall.SIGTERM)
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) { select {} })
	err := http.ListenAndServe("127.0.0.1:"+os.Getenv("PORT"), mux)
	fmt.Fprintln(os.Stderr, "test worker:", err)
	os.Exit(1)
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binDir is the directory of the built sluice binary, "" if none was built.
func binDir() string {
	if binPath == "" {
		return ""
	}
	return filepath.Dir(binPath)
}

// sluiceBin builds the sluice binary once per test binary, without the race
// detector (its timings are sluice's own), and returns its path.
func sluiceBin(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "sluice-deploy-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "sluice")
		binErr = testutil.BuildSluice("..", binPath)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// running is a `sluice serve` started by start.
type running struct {
	*testutil.Process
	addr, admin string
	cfg         string // the config file's text
}

// start runs `sluice serve` on cfg, in which {{listen}} and {{admin}} are
// replaced by free loopback addresses and {{worker}} by a workers command
// running this test binary as runWorker, and waits until readiness
// answers 200. Cleanup kills its process group if it is still running.
func start(t *testing.T, cfg string) *running {
	t.Helper()
	bin := sluiceBin(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	r := &running{addr: testutil.FreeAddr(t), admin: testutil.FreeAddr(t)}
	cfg = strings.NewReplacer(
		"{{listen}}", strconv.Quote(r.addr),
		"{{admin}}", strconv.Quote(r.admin),
		"{{worker}}", strconv.Quote(self),
	).Replace(cfg)
	r.cfg = cfg
	path := testutil.WriteConfig(t, cfg)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("config:\n%s", cfg)
		}
	})
	cmd := exec.Command(bin, "serve", "-c", path)
	cmd.Env = append(os.Environ(), workerEnv+"=1")
	r.Process = testutil.StartProcess(t, cmd, 0)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := testutil.WaitOK(ctx, "http://"+r.addr+"/__sluice/ready", r.Done()); err != nil {
		t.Fatalf("waiting for readiness 200: %v", err)
	}
	return r
}

// poll checks cond every 20 ms (another process's state has no event to
// wait on) until it holds, failing the test after bound or if sluice exits.
func (r *running) poll(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(bound)
	for !cond() {
		select {
		case <-r.Done():
			t.Fatalf("waiting for %s: sluice exited: %v", what, r.Err())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v", what, bound)
		}
	}
}

// get sends GET url on a new connection, bounded by bound (see
// testutil.Get).
func get(url string) (int, string) {
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	return testutil.Get(ctx, url)
}

// scrape reads a Prometheus text exposition: for each metric name, each
// label's values among its series.
func scrape(text string) map[string]map[string]map[string]bool {
	out := map[string]map[string]map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(text))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.IndexAny(line, "{ ")
		if i < 0 {
			continue
		}
		name, labels := line[:i], ""
		if end := strings.LastIndexByte(line, '}'); line[i] == '{' && end > i {
			labels = line[i+1 : end]
		}
		if out[name] == nil {
			out[name] = map[string]map[string]bool{}
		}
		for _, kv := range splitLabels(labels) {
			k, v, _ := strings.Cut(kv, "=")
			v, _ = strconv.Unquote(v)
			if out[name][k] == nil {
				out[name][k] = map[string]bool{}
			}
			out[name][k][v] = true
		}
	}
	return out
}

// splitLabels splits `a="x",b="y"` at the commas outside quotes.
func splitLabels(s string) []string {
	var out []string
	quoted, from := false, 0
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\':
			i++
		case s[i] == '"':
			quoted = !quoted
		case s[i] == ',' && !quoted:
			out = append(out, s[from:i])
			from = i + 1
		}
	}
	if from < len(s) {
		out = append(out, s[from:])
	}
	return out
}
