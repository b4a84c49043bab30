package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/loadgen"
)

func TestHypernovaJob(t *testing.T) {
	var got map[string]struct {
		Name string         `json:"name"`
		Data map[string]int `json:"data"`
	}
	b := HypernovaJob(7, 23)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("the job %s is not JSON: %v", b, err)
	}
	job, ok := got["page"]
	if len(got) != 1 || !ok {
		t.Fatalf("got jobs %s, want one, token page", b)
	}
	if job.Name != "Page" || job.Data["page"] != 7 || job.Data["items"] != 23 || len(job.Data) != 2 {
		t.Errorf("got job %+v, want component Page with data page 7, items 23", job)
	}
}

// A batch answer as Hypernova 2.5.0 writes it (worker.js's serialize
// wraps the HTML; shortened).
const (
	batchOK = `{"success":true,"error":null,"results":{"page":{"name":"Page","html":"<div data-hypernova-key=\"Page\"><h1>Stays</h1></div>","meta":{},"duration":3.1,"statusCode":200,"success":true,"error":null}}}`
	// An unknown component: still a 200, the job failed.
	batchFailed = `{"success":true,"error":null,"results":{"page":{"name":"Nope","html":null,"meta":{},"duration":0.5,"statusCode":404,"success":false,"error":{"name":"ReferenceError","message":"Component \"Nope\" not registered","stack":[]}}}}`
)

func TestParseBatch(t *testing.T) {
	html, err := ParseBatch([]byte(batchOK), "page")
	if err != nil || html != `<div data-hypernova-key="Page"><h1>Stays</h1></div>` {
		t.Errorf("ParseBatch(ok) = %q, %v; want the job's HTML", html, err)
	}
	for _, c := range []struct {
		name, body, token, want string
	}{
		{"failed job", batchFailed, "page", `Component "Nope" not registered`},
		{"other token", batchOK, "other", `without job "other"`},
		{"not JSON", "<html>Cannot POST</html>", "page", "batch answer"},
		{"batch failed", `{"success":false,"results":{"page":{"html":"x","success":true}}}`, "page", "failed"},
	} {
		if _, err := ParseBatch([]byte(c.body), c.token); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestHAProxyConfigHealthChecksAndRedispatch(t *testing.T) {
	plain, err := HAProxyConfig{Listen: "127.0.0.1:3997", Workers: testWorkers, QueueTimeout: 500 * time.Millisecond}.Render()
	if err != nil {
		t.Fatal(err)
	}
	var directives []string
	for _, l := range strings.Split(string(plain), "\n") {
		if !strings.HasPrefix(l, "#") {
			directives = append(directives, l)
		}
	}
	for _, absent := range []string{"check", "redispatch", "retries"} {
		if strings.Contains(strings.Join(directives, "\n"), absent) {
			t.Errorf("the plain haproxy.cfg has %q:\n%s", absent, plain)
		}
	}
	b, err := HAProxyConfig{Listen: "127.0.0.1:3997", Workers: testWorkers, QueueTimeout: 500 * time.Millisecond,
		Check: hypernovaCheck(), Redispatch: true}.Render()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"option redispatch\n",
		"retries 2\n",
		"option httpchk\n",
		`http-check send meth POST uri /batch hdr Content-Type application/json body '{"page":{"name":"Page","data":{"page":1,"items":1}}}'` + "\n",
		"http-check expect status 200\n",
		"server w0 127.0.0.1:4001 maxconn 1 check inter 1000ms fall 2 rise 1\n",
		"server w1 127.0.0.1:4002 maxconn 1 check inter 1000ms fall 2 rise 1\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, s)
		}
	}
	checkWithTool(t, "haproxy", b, "haproxy.cfg", func(path string) []string { return []string{"-c", "-f", path} })

	good := *hypernovaCheck()
	for name, bad := range map[string]func(c *HTTPCheck){
		"no interval":           func(c *HTTPCheck) { c.Interval = 0 },
		"interval under 1ms":    func(c *HTTPCheck) { c.Interval = 1500 * time.Microsecond },
		"no method":             func(c *HTTPCheck) { c.Method = "" },
		"path with a space":     func(c *HTTPCheck) { c.Path = "/a b" },
		"body with a quote":     func(c *HTTPCheck) { c.Body = `{"a":"it's"}` },
		"body on two lines":     func(c *HTTPCheck) { c.Body = "{\n}" },
		"body without its type": func(c *HTTPCheck) { c.ContentType = "" },
	} {
		c := good
		bad(&c)
		if _, err := (HAProxyConfig{Listen: "127.0.0.1:1", Workers: testWorkers, QueueTimeout: time.Second, Check: &c}).Render(); err == nil {
			t.Errorf("%s: got no error, want one", name)
		}
	}
}

func TestSluiceConfigSupervisedWorkers(t *testing.T) {
	cmd := []string{"node", "/srv/hypernova/worker.js"}
	b, err := SluiceConfig{Listen: "127.0.0.1:3999", Admin: "127.0.0.1:3998", Command: cmd, Count: 2, Env: hypernovaEnv}.Render()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("sluice.yaml", b)
	if err != nil {
		t.Fatalf("the supervised sluice.yaml does not validate: %v\n%s", err, b)
	}
	if cfg.Upstreams != nil || cfg.Workers == nil {
		t.Fatalf("got upstreams %+v, workers %+v; want workers only", cfg.Upstreams, cfg.Workers)
	}
	if strings.Join(cfg.Workers.Command, " ") != strings.Join(cmd, " ") || cfg.Workers.Count != 2 {
		t.Errorf("got command %q count %d, want %q count 2", cfg.Workers.Command, cfg.Workers.Count, cmd)
	}
	// The workers' environment is the other setups' workers': React in
	// production mode, not development's slower renders.
	if got := cfg.Workers.Env["NODE_ENV"]; got != "production" || len(cfg.Workers.Env) != len(hypernovaEnv) {
		t.Errorf("got workers.env %v, want %v", cfg.Workers.Env, hypernovaEnv)
	}
	// Every other workers key is sluice's default: a new worker is ready
	// once it accepts a connection (Hypernova has no health route).
	if cfg.Workers.ReadyPath != "" || cfg.Workers.Concurrency != 0 {
		t.Errorf("got readyPath %q concurrency %d, want the defaults", cfg.Workers.ReadyPath, cfg.Workers.Concurrency)
	}
	for name, c := range map[string]SluiceConfig{
		"both":            {Workers: testWorkers, Command: cmd, Count: 2},
		"neither":         {},
		"no count":        {Command: cmd},
		"zero count":      {Command: cmd, Count: 0},
		"upstream ok":     {Workers: testWorkers},
		"env, no command": {Workers: testWorkers, Env: hypernovaEnv},
	} {
		_, err := c.Render()
		if (err == nil) != (name == "upstream ok") {
			t.Errorf("%s: got error %v", name, err)
		}
	}
}

// lockedBuffer is a log file being written while it is read.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) Read(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Read(p)
}

func TestWaitLogFindsALineWrittenLater(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &lockedBuffer{}
		io.WriteString(log, "msg=\"rolling restart started\"\n")
		go func() {
			time.Sleep(300 * time.Millisecond)
			io.WriteString(log, "msg=\"worker ready\"\nmsg=\"rolling restart ") // a line cut by a write
			time.Sleep(300 * time.Millisecond)
			io.WriteString(log, "done\" took=6s\n")
		}()
		start := time.Now()
		line, err := waitLog(t.Context(), log, []string{"rolling restart done", "rolling restart failed"}, 100*time.Millisecond, 5*time.Second)
		if err != nil || line != `msg="rolling restart done" took=6s` {
			t.Fatalf("got %q, %v; want the done line", line, err)
		}
		if el := time.Since(start); el < 600*time.Millisecond || el > 800*time.Millisecond {
			t.Errorf("found after %v, want within a poll of the line (600 ms)", el)
		}
	})
}

func TestWaitLogGivesUpAtItsBound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		log := &lockedBuffer{}
		io.WriteString(log, "msg=\"rolling restart started\"\n")
		start := time.Now()
		_, err := waitLog(t.Context(), log, []string{"rolling restart done"}, 100*time.Millisecond, 2*time.Second)
		if !errors.Is(err, errLogWait) {
			t.Fatalf("got %v, want errLogWait", err)
		}
		if el := time.Since(start); el != 2*time.Second {
			t.Errorf("gave up after %v, want the bound, 2s", el)
		}
	})
}

func TestWaitCPUIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Renderers busy (a whole core) for 1.5 s, then idle.
		start := time.Now()
		cpu := func() time.Duration { return min(time.Since(start), 1500*time.Millisecond) }
		took, err := waitCPUIdle(t.Context(), cpu, 0.05, 200*time.Millisecond, 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		// Polls end at multiples of 200 ms: 1.4 -> 1.6 s still holds
		// 100 ms of CPU, 1.6 -> 1.8 s is the first idle one.
		if took != 1800*time.Millisecond {
			t.Errorf("idle after %v, want 1.8s: the first poll without CPU", took)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		// A tenth of a core stays over a 5% threshold: busy to the bound.
		start := time.Now()
		cpu := func() time.Duration { return time.Since(start) / 10 }
		took, err := waitCPUIdle(t.Context(), cpu, 0.05, 200*time.Millisecond, 3*time.Second)
		if !errors.Is(err, ErrStillBusy) || took != 3*time.Second {
			t.Errorf("got %v after %v, want ErrStillBusy at the 3s bound", err, took)
		}
	})
}

func TestWaitBatchWaitsForARender(t *testing.T) {
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.URL.Path != "/batch" || r.Header.Get("Content-Type") != jsonType || !bytes.Equal(body, HypernovaJob(1, 1)) {
			http.Error(w, "want POST /batch with the job", http.StatusBadRequest)
			return
		}
		switch calls.Add(1) {
		case 1: // listening, not rendering yet
			http.Error(w, "starting", http.StatusServiceUnavailable)
		case 2: // a failed render
			io.WriteString(w, batchFailed)
		default:
			io.WriteString(w, batchOK)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := waitBatch(ctx, srv.URL+"/", HypernovaJob(1, 1)); err != nil {
		t.Fatal(err)
	}
	if n := calls.Load(); n != 3 {
		t.Errorf("ready after %d requests, want 3: the first render that succeeded", n)
	}
	ctx, cancel = context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if err := waitBatch(ctx, srv.URL+"/nowhere/", HypernovaJob(1, 1)); err == nil {
		t.Error("got no error from a server that never renders, want one")
	}
}

func TestPoolRestartOneReplacesOnlyThatProcess(t *testing.T) {
	if _, err := os.Stat("/bin/sleep"); err != nil {
		t.Skip("no /bin/sleep")
	}
	dir := t.TempDir()
	var readies atomic.Int64
	p := &Pool{ready: func(ctx context.Context, addr string) error { readies.Add(1); return nil }}
	p, err := startProcs(t.Context(), p, 2, dir, Layout{}, func(i, port int) procSpec {
		return procSpec{name: fmt.Sprintf("sleeper-%d", i), argv: []string{"/bin/sleep", "30"}}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	first, second := p.Procs[0], p.Procs[1]
	if err := p.RestartOne(t.Context(), 1); err != nil {
		t.Fatal(err)
	}
	select {
	case <-second.Exited():
	default:
		t.Error("the restarted process's old one is still running")
	}
	if p.Procs[0] != first || p.Procs[1] == second {
		t.Error("want process 1 replaced and process 0 kept")
	}
	select {
	case <-p.Procs[1].Exited():
		t.Error("the new process exited")
	case <-first.Exited():
		t.Error("process 0 was stopped")
	default:
	}
	if n := readies.Load(); n != 3 {
		t.Errorf("readiness waited for %d times, want 3: both at the start, the new one after", n)
	}
}

func TestHypernovaMarkdown(t *testing.T) {
	run := func(setup, point string, goodput, success float64, p99 time.Duration, successes int64) *RunResult {
		return &RunResult{Setup: setup, Point: point, CPU: CPUUse{Others: goodput / 100, Wall: 1}, Reports: []*loadgen.Report{{Total: loadgen.Stats{
			Goodput: goodput, SuccessRatio: success, Successes: successes, Latency: loadgen.Latency{P99: p99}}}}}
	}
	runs := []*RunResult{
		run(SetupHypernovaCoordinator, "1x", 60, 0.9, 400*time.Millisecond, 300),
		run(SetupHypernovaCoordinator, "2x", 0, 0, 0, 0),
		run(SetupNginxHA500ms, "1x", 70, 0.98, 530*time.Millisecond, 350),
		run(SetupNginxHA500ms, "2x", 140, 0.5, 520*time.Millisecond, 700),
		run(SetupSluice, "1x", 63, 0.95, 200*time.Millisecond, 320),
		run(SetupSluice, "2x", 126, 0.45, 260*time.Millisecond, 630),
		run(SetupNginxHA500ms, restartPoint, 40, 0.992, 300*time.Millisecond, 200),
		run(SetupSluice, restartPoint, 40, 0.98, 300*time.Millisecond, 200),
		run(SetupSluice, restartBaseline, 40, 0.995, 300*time.Millisecond, 200),
	}
	info := HypernovaInfo{Workers: 2, CapacityRPS: 71.5, Restart: map[string]string{SetupSluice: "POST /workers/restart"}}
	md := HypernovaMarkdown(info, runs)
	for _, want := range []string{
		"straight to the 2 workers): 71.5/s",
		"| setup | 1x | 2x | 4x | p99 1x, 2x, 4x | lost during a rolling restart at 0.7x | other load, cores: 1x, 2x, 4x, restart |",
		"| hypernova-coordinator | 60.0/s (90.0%) | 0.0/s (0.0%) | — | 400 ms, —, — | n/a | 0.60, 0.00, —, — |",
		"| nginx-haproxy-500ms | 70.0/s (98.0%) | 140.0/s (50.0%) | — | 530 ms, 520 ms, — | 0.8% | 0.70, 1.40, —, 0.40 |",
		"| sluice | 63.0/s (95.0%) | 126.0/s (45.0%) | — | 200 ms, 260 ms, — | 2.0% (0.5% without) | 0.63, 1.26, —, 0.40 |",
		"| sluice / HAProxy | 0.90x | 0.90x | — | 0.38x, 0.50x, — | | |",
		"- sluice: POST /workers/restart",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
}

// With several restart rounds the table gives each front's median loss
// and its range, with and without a roll.
func TestHypernovaMarkdownRestartRounds(t *testing.T) {
	run := func(setup, point string, success float64) *RunResult {
		return &RunResult{Setup: setup, Point: point, CPU: CPUUse{Others: success, Wall: 1}, Reports: []*loadgen.Report{{Total: loadgen.Stats{
			Goodput: 40, SuccessRatio: success, Successes: 200, Latency: loadgen.Latency{P99: time.Second}}}}}
	}
	var runs []*RunResult
	for _, r := range [][4]float64{{1, 0.80, 0.97, 0.90}, {0.99, 0.75, 1, 0.95}, {1, 0.70, 0.98, 0.99}} {
		runs = append(runs, run(SetupNginxHA500ms, restartBaseline, r[0]), run(SetupNginxHA500ms, restartPoint, r[1]),
			run(SetupSluice, restartBaseline, r[2]), run(SetupSluice, restartPoint, r[3]))
	}
	md := HypernovaMarkdown(HypernovaInfo{Workers: 2, CapacityRPS: 50}, runs)
	for _, want := range []string{
		"| 25.0% median of 3 (20.0-30.0%) (0.0% median of 3 (0.0-1.0%) without) | —, —, —, 0.80 |",
		"| 5.0% median of 3 (1.0-10.0%) (2.0% median of 3 (0.0-3.0%) without) | —, —, —, 0.99 |",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the table lacks %q:\n%s", want, md)
		}
	}
	if got := lossCell(runs[1:2]); got != "20.0%" {
		t.Errorf("one run: %q, want 20.0%%", got)
	}
	if got := lossCell([]*RunResult{runs[1], runs[5]}); got != "22.5% median of 2 (20.0-25.0%)" {
		t.Errorf("two runs: %q, want the mean of the two as the median", got)
	}
}

func TestHypernovaWorkerDirectoryIsAPackage(t *testing.T) {
	dir := filepath.Dir(filepath.Join("..", "..", DefaultHypernovaWorker))
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	for dep, v := range map[string]string{"hypernova": "2.5.0", "react": "19.3.1", "react-dom": "19.3.1"} {
		if pkg.Dependencies[dep] != v {
			t.Errorf("package.json: %s %q, want %s pinned", dep, pkg.Dependencies[dep], v)
		}
	}
	for _, f := range []string{"package-lock.json", "worker.js", "page.js"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Error(err)
		}
	}
}

func TestRewriteRedrawsTheHypernovaTable(t *testing.T) {
	dir := t.TempDir()
	f := hypernovaFile{Scenario: ScenarioHypernova, Info: HypernovaInfo{Workers: 2, CapacityRPS: 400},
		Runs: []*RunResult{{Setup: SetupSluice, Point: "1x", Reports: []*loadgen.Report{{Total: loadgen.Stats{Goodput: 380, SuccessRatio: 0.95}}}}}}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ScenarioHypernova+".json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Rewrite(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ScenarioHypernova+".md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| sluice | 380.0/s (95.0%) |") {
		t.Errorf("the rewritten table lacks sluice's 1x:\n%s", md)
	}
}

// fakeRenderers is a pool whose CPU time grows at busy cores until it is
// restarted.
type fakeRenderers struct {
	busy     float64
	since    time.Time
	restarts int
}

func (f *fakeRenderers) CPUTime() time.Duration {
	return time.Duration(f.busy * float64(time.Since(f.since)))
}

func (f *fakeRenderers) Restart(context.Context) error {
	f.restarts++
	f.busy, f.since = 0, time.Now()
	return nil
}

// Before a run every pool on the machine is idle, not only the setup's
// own: one that still renders a backlog (Hypernova's coordinator queues
// without bound) past the bound is restarted; an idle one is left alone.
func TestIdleRenderersRestartsABusyPool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		own := &fakeRenderers{since: time.Now()}
		other := &fakeRenderers{busy: 0.8, since: time.Now()}
		start := time.Now()
		if err := idleRenderers(t.Context(), slog.New(slog.DiscardHandler), "sluice", 2*time.Second, own, other); err != nil {
			t.Fatal(err)
		}
		if own.restarts != 0 || other.restarts != 1 {
			t.Errorf("restarts: own %d, other %d; want 0 and 1 (the busy one)", own.restarts, other.restarts)
		}
		if took := time.Since(start); took < 2*time.Second {
			t.Errorf("returned after %v, want the busy pool given its 2 s first", took)
		}
	})
}
