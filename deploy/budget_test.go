package deploy

import (
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
)

// The bounds `sluice serve` puts on the steps of its shutdown after the
// drain (internal/app: newFront, App.serve and adminServer.shutdown):
// unexported there, so copied here, and TestBudgetMatchesServe checks the
// copies against its source.
const (
	workerStopSlack   = time.Second     // workers: Shutdown gets stopTimeout + 1 s
	upstreamStop      = 5 * time.Second // upstreams: Shutdown gets 5 s
	adminCloseTimeout = 2 * time.Second // the admin listener's Shutdown
)

// worstCaseShutdown is the longest `sluice serve` with cfg can take from
// SIGTERM to exit, when every step runs to its bound:
//
//  1. the drain: server.shutdownTimeout from the signal (drainDelay is
//     inside it); then the connections still open are cut;
//  2. the workers: Drain (their requests still running) and stop
//     (SIGTERM, SIGKILL after workers.stopTimeout), all within
//     workers.stopTimeout + 1 s, after which they are killed at once;
//     upstreams are released within 5 s;
//  3. the admin listener: its requests get 2 s to finish.
//
// A process manager's stop timeout must exceed it, or it kills sluice
// while the shutdown is still orderly.
func worstCaseShutdown(cfg *config.Config) time.Duration {
	d := cfg.Server.ShutdownTimeout
	switch {
	case cfg.Workers != nil:
		d += cfg.Workers.StopTimeout + workerStopSlack
	case cfg.Upstreams != nil:
		d += upstreamStop
	}
	if cfg.Admin.Enabled() {
		d += adminCloseTimeout
	}
	return d
}

func TestWorstCaseShutdown(t *testing.T) {
	tests := []struct {
		name, yaml string
		want       time.Duration
	}{
		{"defaults: library mode", ``, 25*time.Second + 2*time.Second},
		{"workers at their defaults", "workers: {command: [node, w.js]}", 25*time.Second + 11*time.Second + 2*time.Second},
		{"workers, no admin listener", "admin: {listen: \"off\"}\nworkers: {command: [node, w.js], stopTimeout: 3s}",
			25*time.Second + 4*time.Second},
		{"upstreams", "server: {shutdownTimeout: 10s}\nupstreams: {servers: [\"127.0.0.1:8080\"]}",
			10*time.Second + 5*time.Second + 2*time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("test.yaml", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if got := worstCaseShutdown(cfg); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBudgetMatchesServe reads internal/app's shutdown sequence and fails
// when the bounds worstCaseShutdown copies from it are no longer there:
// whoever changes them must change the budget, and the grace periods.
func TestBudgetMatchesServe(t *testing.T) {
	funcs := parseFuncs(t, filepath.Join("..", "internal", "app"))
	checks := []struct {
		fn, pattern, what string
	}{
		{"newFront", `StopTimeout\s*\+\s*time\.Second`, "workers' Shutdown gets stopTimeout + 1 s"},
		{"newFront", `stopIn:\s*5\s*\*\s*time\.Second`, "upstreams' Shutdown gets 5 s"},
		{"App.serve", `a\.srv\.Serve\(`, "the drain (server.Serve, bounded by shutdownTimeout) comes first"},
		{"adminServer.shutdown", `WithTimeout\(.*,\s*2\s*\*\s*time\.Second\)`, "the admin listener's Shutdown gets 2 s"},
	}
	for _, c := range checks {
		body, ok := funcs[c.fn]
		if !ok {
			t.Errorf("internal/app: no func %s: the shutdown sequence moved; update worstCaseShutdown", c.fn)
			continue
		}
		if !regexp.MustCompile(c.pattern).MatchString(body) {
			t.Errorf("internal/app %s: %s is no longer so (no match for %s): update worstCaseShutdown and the grace periods",
				c.fn, c.what, c.pattern)
		}
	}
}

// parseFuncs returns the source of dir's non-test functions, keyed
// "Recv.Name" for methods and "Name" for functions.
func parseFuncs(t *testing.T, dir string) map[string]string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	out := map[string]string{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok {
				continue
			}
			key := fd.Name.Name
			if fd.Recv != nil && len(fd.Recv.List) == 1 {
				typ := fd.Recv.List[0].Type
				if star, ok := typ.(*ast.StarExpr); ok {
					typ = star.X
				}
				if id, ok := typ.(*ast.Ident); ok {
					key = id.Name + "." + key
				}
			}
			var b bytes.Buffer
			printer.Fprint(&b, fset, fd)
			out[key] = b.String()
		}
	}
	return out
}

// TestShutdownWithinBudget runs the worst case for real: a request hangs
// in a worker that ignores SIGTERM, so the drain is cut at
// shutdownTimeout, the worker's Drain waits out its whole budget and the
// worker is killed. sluice must exit after the drain and worker steps
// have run to their bounds (the test reaches the worst case), and within
// worstCaseShutdown of the signal (plus slack for a loaded machine).
func TestShutdownWithinBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sluice and waits out its shutdown (about 5 s)")
	}
	r := start(t, `
server: {listen: {{listen}}, drainDelay: 100ms, shutdownTimeout: 1s}
admin: {listen: {{admin}}, pprof: false}
workers:
  command: [{{worker}}]
  count: 1
  concurrency: 1
  readyPath: /healthz
  slowStart: 0s
  stopTimeout: 3s
proxy: {timeout: 60s}
`)
	cfg, err := config.Parse("test.yaml", []byte(r.cfg))
	if err != nil {
		t.Fatal(err)
	}
	hung := make(chan int, 1)
	go func() { code, _ := get("http://" + r.addr + "/hang"); hung <- code }()
	r.poll(t, "the request in flight at the worker", func() bool { return r.inflight() == 1 })

	t0 := time.Now()
	if err := r.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	budget := worstCaseShutdown(cfg)
	select {
	case <-r.Done():
	case <-time.After(budget + bound):
		t.Fatalf("sluice still running %v after SIGTERM (budget %v)", budget+bound, budget)
	}
	took := time.Since(t0)
	t.Logf("exit %v after SIGTERM; budget %v", took, budget)

	if code := r.Cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code: got %d, want 1 (a drain cut short)", code)
	}
	if least := cfg.Server.ShutdownTimeout + cfg.Workers.StopTimeout + workerStopSlack; took < least {
		t.Errorf("exit after %v, before the drain and the workers' bounds (%v): not the worst case", took, least)
	}
	// Slack for a loaded machine (process exit, reaping, scheduling),
	// beside the admin listener's 2 s, which this case does not use:
	// less than the workers' step, so a budget without it fails.
	const slack = 1500 * time.Millisecond
	if took > budget+slack {
		t.Errorf("exit after %v: past the worst case %v (+%v slack): worstCaseShutdown is wrong", took, budget, slack)
	}
	select {
	case code := <-hung:
		if code != 0 {
			t.Errorf("the hanging request: got status %d, want its connection cut", code)
		}
	case <-time.After(bound):
		t.Error("the hanging request's connection was never closed")
	}
}

// TestSecondSignalCutsEverything: the operator's second SIGTERM ends the
// process now, whatever the budgets: the hanging request is cut and the
// worker that ignores SIGTERM is killed without waiting out stopTimeout.
func TestSecondSignalCutsEverything(t *testing.T) {
	if testing.Short() {
		t.Skip("starts sluice and a worker")
	}
	r := start(t, `
server: {listen: {{listen}}, drainDelay: 100ms, shutdownTimeout: 30s}
admin: {listen: {{admin}}, pprof: false}
workers:
  command: [{{worker}}]
  count: 1
  concurrency: 1
  readyPath: /healthz
  slowStart: 0s
  stopTimeout: 30s
proxy: {timeout: 60s}
`)
	hung := make(chan int, 1)
	go func() { code, _ := get("http://" + r.addr + "/hang"); hung <- code }()
	r.poll(t, "the request in flight at the worker", func() bool { return r.inflight() == 1 })

	t0 := time.Now()
	if err := r.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The first signal is draining (readiness says so) before the second.
	r.poll(t, "readiness 503 while draining", func() bool {
		code, _ := get("http://" + r.addr + "/__sluice/ready")
		return code == http.StatusServiceUnavailable || code == 0
	})
	if err := r.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// Well under either 30 s budget: the cut, the kill and the admin
	// listener's 2 s close.
	const within = 6 * time.Second
	select {
	case <-r.Done():
	case <-time.After(within):
		t.Fatalf("sluice still running %v after the second SIGTERM: the workers' stopTimeout was waited out", within)
	}
	t.Logf("exit %v after the first SIGTERM", time.Since(t0))
	if code := r.Cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit code: got %d, want 1 (a drain cut short)", code)
	}
	select {
	case <-hung:
	case <-time.After(bound):
		t.Error("the hanging request's connection was never closed")
	}
}

// inflight is the admission controller's requests in flight, from the
// admin /stats; -1 when it cannot be read.
func (r *running) inflight() int {
	var st struct {
		Admission struct{ Inflight int } `json:"admission"`
	}
	code, body := get("http://" + r.admin + "/stats")
	if code != http.StatusOK || json.Unmarshal([]byte(body), &st) != nil {
		return -1
	}
	return st.Admission.Inflight
}
