package eval

import (
	"context"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/loadgen"
)

func TestNodeSetups(t *testing.T) {
	async, ok := NodeWorkloadFor(ScenarioNodeAsync)
	if !ok {
		t.Fatal("no node-async workload")
	}
	names := func(ns []nodeSetup) []string {
		var out []string
		for _, n := range ns {
			out = append(out, n.name)
		}
		return out
	}
	tests := []struct {
		name     string
		families []string
		haproxy  bool
		baseline bool
		want     []string
	}{
		{"all", NodeSetupFamilies(), true, false, []string{"sluice", "sluice-fixed-1", "sluice-fixed-4", "sluice-fixed-8", "sluice-fixed-16", "sluice-fixed-32", "nginx-haproxy-500ms", "round-robin"}},
		{"no haproxy binaries", NodeSetupFamilies(), false, false, []string{"sluice", "sluice-fixed-1", "sluice-fixed-4", "sluice-fixed-8", "sluice-fixed-16", "sluice-fixed-32", "round-robin"}},
		{"some families, any order", []string{NodeFamilyRoundRobin, NodeFamilySluice}, true, false, []string{"sluice", "round-robin"}},
		{"a baseline beside sluice", []string{NodeFamilySluice, NodeFamilyHAProxy}, true, true, []string{"sluice", "sluice-before", "nginx-haproxy-500ms"}},
		{"a baseline, no sluice family", []string{NodeFamilyHAProxy}, true, true, []string{"nginx-haproxy-500ms"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(nodeSetups(async, tt.families, tt.haproxy, tt.baseline)); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	if got, want := HAProxyMaxConnSetup(1), SetupNginxHA500ms; got != want {
		t.Errorf("HAProxyMaxConnSetup(1): got %q, want %q", got, want)
	}
	if got, want := HAProxyMaxConnSetup(16), "nginx-haproxy-500ms-maxconn-16"; got != want {
		t.Errorf("HAProxyMaxConnSetup(16): got %q, want %q", got, want)
	}
}

func TestNodePass(t *testing.T) {
	tests := []struct {
		ns         nodeSetup
		sweepFirst bool
		want       int
	}{
		{nodeSetup{name: SetupSluice, family: NodeFamilySluice}, true, passMain},
		{nodeSetup{name: HopBaseline, family: nodeFamilyBaseline}, true, passMain},
		{nodeSetup{name: HAProxyMaxConnSetup(1), family: NodeFamilyHAProxy, concurrency: 1}, true, passMain},
		{nodeSetup{name: FixedSetup(32), family: NodeFamilyFixed, concurrency: 32}, true, passSweep},
		{nodeSetup{name: FixedSetup(32), family: NodeFamilyFixed, concurrency: 32}, false, passMain},
		{nodeSetup{name: SetupRoundRobin, family: NodeFamilyRoundRobin}, true, passLast},
		{nodeSetup{name: SetupRoundRobin, family: NodeFamilyRoundRobin}, false, passLast},
	}
	for _, tt := range tests {
		if got := nodePass(tt.ns, tt.sweepFirst); got != tt.want {
			t.Errorf("nodePass(%s, sweepFirst %v): got pass %d, want %d", tt.ns.name, tt.sweepFirst, got, tt.want)
		}
	}
	if !(passSweep < passMain && passMain < passLast && passLast < nodePasses) {
		t.Errorf("passes run sweep %d, main %d, last %d: want the sweep first and the setup without admission last", passSweep, passMain, passLast)
	}
}

func TestTurns(t *testing.T) {
	a, b, c := &target{name: "a"}, &target{name: "b"}, &target{name: "c"}
	targets := []*target{a, b, c}
	order := func(ts []*target) string {
		var s string
		for _, t := range ts {
			s += t.name
		}
		return s
	}
	for point, want := range []string{"abc", "cba", "abc", "cba"} {
		if got := order(turns(targets, point)); got != want {
			t.Errorf("point %d: got order %s, want %s", point, got, want)
		}
	}
	if got := order(targets); got != "abc" {
		t.Errorf("turns reordered its argument: %s", got)
	}
}

func TestNodeWorkloadsAreScenarios(t *testing.T) {
	for _, w := range NodeWorkloads() {
		if !slices.Contains(Scenarios(), w.Scenario) || !IsNodeScenario(w.Scenario) {
			t.Errorf("%s: not listed as a Node.js scenario", w.Scenario)
		}
		if len(w.Fixed) == 0 || w.P99Target <= 0 || w.CapacityClients < 1 || !strings.HasPrefix(w.Query, "?") {
			t.Errorf("%s: incomplete workload %+v", w.Scenario, w)
		}
	}
	if IsNodeScenario(ScenarioGoodput) {
		t.Errorf("goodput: got a Node.js scenario, want the demo workers'")
	}
}

// nodeRun is a RunResult with the figures the Node.js tables read.
func nodeRun(setup string, m float64, ka bool, goodput float64, p99 time.Duration, wasted int64, busy float64, errs map[string]int64) *RunResult {
	requests := int64(1000)
	var failed int64
	for _, v := range errs {
		failed += v
	}
	return &RunResult{
		Setup: setup, Point: multipleName(m), Multiple: m, KeepAlive: ka, Capacity: 100,
		Reports: []*loadgen.Report{{Total: loadgen.Stats{
			Requests: requests, Successes: requests - failed, Goodput: goodput,
			SuccessRatio: float64(requests-failed) / float64(requests),
			Latency:      loadgen.Latency{P99: p99}, Errors: errs,
		}}},
		Rendered: 1000, Wasted: wasted,
		CPU: CPUUse{RenderersLoad: 2 * busy * 5, LoadWall: 5},
	}
}

func TestBestFixed(t *testing.T) {
	runs := []*RunResult{
		nodeRun(FixedSetup(1), 1, true, 50, 0, 0, 0, nil),
		nodeRun(FixedSetup(1), 2, true, 50, 0, 0, 0, nil),
		nodeRun(FixedSetup(4), 1, true, 90, 0, 0, 0, nil),
		nodeRun(FixedSetup(4), 2, true, 100, 0, 0, 0, nil),
		nodeRun(FixedSetup(8), 1, true, 100, 0, 0, 0, nil),
		nodeRun(FixedSetup(8), 2, true, 90, 0, 0, 0, nil), // ties with 4: the smaller wins
		nodeRun(SetupSluice, 1, true, 500, 0, 0, 0, nil),
	}
	if n, ok := bestFixed(runs, []int{1, 4, 8, 16}); !ok || n != 4 {
		t.Errorf("got %d, %v; want 4, true", n, ok)
	}
	if _, ok := bestFixed(runs[6:], []int{1, 4}); ok {
		t.Error("got a best N without a sweep, want none")
	}
}

func TestNodeShares(t *testing.T) {
	r := nodeRun(SetupSluice, 1, true, 90, 0, 0, 0.95, map[string]int64{"503:codel": 30, "503": 10, "429": 10, "timeout": 50})
	for _, tt := range []struct {
		name      string
		got, want float64
	}{
		{"shed", ShedShare(r), 0.05},
		{"failed", FailedShare(r), 0.1},
		{"busy", BusyShare(r, 2), 0.95},
	} {
		if math.Abs(tt.got-tt.want) > 1e-9 {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
	if !math.IsNaN(BusyShare(&RunResult{}, 2)) {
		t.Error("busy share without a load wall: got a number, want NaN")
	}
}

func TestNodeTargets(t *testing.T) {
	info := NodeInfo{Workers: 2, P99Target: 150 * time.Millisecond}
	runs := []*RunResult{
		nodeRun(SetupSluice, 1, true, 96, 100*time.Millisecond, 0, 0.8, map[string]int64{"503:codel": 40}),
		nodeRun(FixedSetup(1), 1, true, 100, 0, 0, 0, nil),
		nodeRun(SetupNginxHA500ms, 1, true, 97, 0, 0, 0, nil),
		nodeRun(SetupSluice, 2, true, 100, 200*time.Millisecond, 3, 0.95, nil),
		nodeRun(FixedSetup(1), 2, true, 100, 0, 0, 0, nil),
		nodeRun(SetupNginxHA500ms, 2, true, 90, 0, 0, 0, nil),
		nodeRun(SetupSluice, 2, false, 1, 0, 0, 0, nil), // the other client mode
	}
	tb := nodeTargets(info, runs, true)
	if len(tb.Rows) != 2 {
		t.Fatalf("got %d rows, want 2 (1x, 2x):\n%s", len(tb.Rows), tb.Markdown())
	}
	want := [][]string{
		// ≥95% of best fixed, ≥ HAProxy, wasted, p99, failed at 1x, busy
		{"yes", "**no**", "yes (", "yes (", "yes (4%)", "80%"},
		{"yes", "yes", "**no** (3", "**no** (200 ms)", "0%", "yes (95%)"},
	}
	for i, row := range tb.Rows {
		got := []string{row[3], row[5], row[6], row[7], row[8], row[9]}
		for j := range got {
			if !strings.HasPrefix(got[j], want[i][j]) {
				t.Errorf("row %s, column %s: got %q, want it to start with %q", row[0], tb.Header[j+3+boolInt(j > 0)], got[j], want[i][j])
			}
		}
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestNodeReportRewrite(t *testing.T) {
	dir := t.TempDir()
	info := NodeInfo{Scenario: ScenarioNodeReact, Worker: DefaultNodeWorker, Query: "?page=7", Workers: 2, CapacityRPS: 100,
		Capacity: []float64{99, 100, 101}, CapacityLatency: []float64{20, 20, 20}, Fixed: []int{1, 2}, BestFixed: 1, P99Target: 150 * time.Millisecond}
	var runs []*RunResult
	for _, ka := range []bool{true, false} {
		for _, m := range NodeMultiples() {
			for _, setup := range []string{SetupSluice, FixedSetup(1), FixedSetup(2), SetupNginxHA500ms, SetupRoundRobin} {
				runs = append(runs, nodeRun(setup, m, ka, 90, 100*time.Millisecond, 0, 0.9, nil))
			}
		}
	}
	s := &Suite{o: Options{OutDir: dir}}
	if err := s.writeNode(ScenarioNodeReact, info, runs); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(filepath.Join(dir, ScenarioNodeReact+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"### sluice (defaults) against the targets, client keep-alive on", "| sluice-fixed-2 |", "| 8x |"} {
		if !strings.Contains(string(first), want) {
			t.Errorf("the tables lack %q:\n%s", want, first)
		}
	}
	for _, ka := range []string{"keepalive", "newconn"} {
		if _, err := os.Stat(filepath.Join(dir, ScenarioNodeReact+"-goodput-"+ka+".svg")); err != nil {
			t.Errorf("chart: %v", err)
		}
	}
	if err := os.Remove(filepath.Join(dir, ScenarioNodeReact+".md")); err != nil {
		t.Fatal(err)
	}
	if err := Rewrite(dir); err != nil {
		t.Fatal(err)
	}
	again, err := os.ReadFile(filepath.Join(dir, ScenarioNodeReact+".md"))
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(first) {
		t.Errorf("rewritten tables differ from the run's:\n%s\n---\n%s", again, first)
	}
}

func TestSluiceConfigNodeConcurrency(t *testing.T) {
	for _, tt := range []struct {
		concurrency int
		auto        bool
	}{{0, true}, {1, false}, {16, false}} {
		b, err := SluiceConfig{Listen: "127.0.0.1:3999", Admin: "off", Workers: testWorkers, Concurrency: tt.concurrency}.Render()
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Parse("sluice.yaml", b)
		if err != nil {
			t.Fatalf("concurrency %d: does not validate: %v\n%s", tt.concurrency, err, b)
		}
		for i, s := range cfg.Upstreams.Servers {
			if s.Concurrency.Auto() != tt.auto || (!tt.auto && int(s.Concurrency) != tt.concurrency) {
				t.Errorf("concurrency %d, upstream %d: got %d (auto %v), want %d (auto %v)", tt.concurrency, i, s.Concurrency, s.Concurrency.Auto(), tt.concurrency, tt.auto)
			}
		}
		if tt.auto && strings.Contains(string(b), "concurrency:") {
			t.Errorf("concurrency 0: got the key written, want sluice's default left to apply:\n%s", b)
		}
	}
}

func TestHAProxyConfigMaxConn(t *testing.T) {
	b, err := HAProxyConfig{Listen: "127.0.0.1:3997", Workers: testWorkers, QueueTimeout: 500 * time.Millisecond, MaxConn: 16}.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"server w0 127.0.0.1:4001 maxconn 16", "server w1 127.0.0.1:4002 maxconn 16"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, b)
		}
	}
	if _, err := (HAProxyConfig{Listen: "127.0.0.1:1", Workers: testWorkers, QueueTimeout: time.Second, MaxConn: -1}).Render(); err == nil {
		t.Error("maxconn -1: got no error, want one")
	}
	checkWithTool(t, "haproxy", b, "haproxy.cfg", func(path string) []string { return []string{"-c", "-f", path} })
}

// TestNodeCounters starts the example's real worker with the suite's
// preload, when node and the example's dependencies are there: the stats
// path counts renders and requests, BENCH_PAGE_ITEMS shrinks the page
// (and ?cards=M asks for fewer of its cards),
// BENCH_RENDERS renders it more than once, BENCH_NO_SATURATION drops the
// saturation report.
func TestNodeCounters(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", DefaultNodeWorker))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules")); err != nil {
		t.Skip("examples/react-ssr: npm ci not done")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 9*time.Second)
	defer cancel()
	pool, err := StartNodeWorkers(ctx, node, script, 1, NodeWorkload{Items: 3}, NodeReadyPath, t.TempDir(), Layout{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	c := newClient(5 * time.Second)
	var page strings.Builder
	if status, err := get(ctx, c, "http://"+pool.Addrs[0]+"/?page=2", &page); err != nil || status != 200 {
		t.Fatalf("GET /?page=2: got %d, %v; want 200", status, err)
	}
	if n := strings.Count(page.String(), "<article"); n != 3 {
		t.Errorf("got %d listing cards, want BENCH_PAGE_ITEMS=3", n)
	}
	// ?cards=M asks for the first M of them (the suite's page-size mix).
	page.Reset()
	if status, err := get(ctx, c, "http://"+pool.Addrs[0]+"/?page=2&cards=2", &page); err != nil || status != 200 {
		t.Fatalf("GET /?page=2&cards=2: got %d, %v; want 200", status, err)
	}
	if n := strings.Count(page.String(), "<article"); n != 2 {
		t.Errorf("?cards=2: got %d listing cards, want 2", n)
	}
	if status, err := get(ctx, c, "http://"+pool.Addrs[0]+"/nope", &strings.Builder{}); err != nil || status != 404 {
		t.Fatalf("GET /nope: got %d, %v; want 404", status, err)
	}
	st, _, err := pool.WaitIdle(ctx, 20*time.Millisecond, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if st.Rendered != 2 || st.Inflight != 0 || st.PeakInflight != 1 {
		t.Errorf("got %+v, want 2 renders, none in flight, a peak of 1", st)
	}

	// A restarted worker is warmed before it is handed back.
	warmed := 0
	pool.Warm = func(ctx context.Context) error {
		warmed++
		_, err := get(ctx, c, "http://"+pool.Addrs[0]+"/?page=3", &strings.Builder{})
		return err
	}
	if err := pool.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := pool.Stats(ctx); err != nil || warmed != 1 || st.Rendered != 1 {
		t.Errorf("after Restart: got %d warm-ups, stats %+v (%v); want 1 warm-up and its one render in a fresh count", warmed, st, err)
	}

	heavy, err := StartNodeWorkers(ctx, node, script, 1, NodeWorkload{Items: 3, Renders: 4}, NodeReadyPath, t.TempDir(), Layout{})
	if err != nil {
		t.Fatal(err)
	}
	defer heavy.Stop()
	page.Reset()
	if status, err := get(ctx, c, "http://"+heavy.Addrs[0]+"/?page=2", &page); err != nil || status != 200 {
		t.Fatalf("BENCH_RENDERS=4: GET /?page=2: got %d, %v; want 200", status, err)
	}
	if n := strings.Count(page.String(), "<article"); n != 3 {
		t.Errorf("BENCH_RENDERS=4: got %d listing cards, want one page of 3", n)
	}
	if st, err := heavy.Stats(ctx); err != nil || st.Rendered != 4 {
		t.Errorf("BENCH_RENDERS=4: stats %+v (%v), want 4 renders for the one request", st, err)
	}

	quiet, err := StartNodeWorkers(ctx, node, script, 1, NodeWorkload{Quiet: true}, NodeReadyPath, t.TempDir(), Layout{})
	if err != nil {
		t.Fatal(err)
	}
	defer quiet.Stop()
	// BENCH_NO_SATURATION drops the worker's saturation report.
	for _, tc := range []struct {
		addr string
		want bool
	}{{pool.Addrs[0], true}, {quiet.Addrs[0], false}} {
		resp, err := c.Get("http://" + tc.addr + "/?page=1")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if _, got := resp.Header["Sluice-Saturation"]; got != tc.want {
			t.Errorf("%s: Sluice-Saturation sent: %t, want %t", tc.addr, got, tc.want)
		}
	}
}

func TestParseWorkerLimits(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want []int
	}{
		{`{"proxy":{"endpoints":[{"id":2,"limit":42,"adaptive":true},{"id":1,"limit":40}]}}`, []int{42, 40}},
		{`{"proxy":{}}`, nil},
		{`not json`, nil},
	} {
		if got := parseWorkerLimits([]byte(tt.in)); !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %v, want %v", tt.in, got, tt.want)
		}
	}
}
