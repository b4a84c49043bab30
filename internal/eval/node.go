package eval

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// The Node.js scenarios: the same evaluation as scenario goodput, on real
// Node.js workers (examples/react-ssr's React 19 renderer, run by
// sluice-worker, which reports Sluice-Saturation on every response)
// instead of the Go demo workers. Each workload gets two fresh worker
// processes, shared by every setup of that workload.
const (
	// ScenarioNodeReact is the CPU-bound workload: GET /?page=N, one
	// synchronous render of NodeReactItems listing cards.
	ScenarioNodeReact = "node-react"
	// ScenarioNodeAsync is the async workload: GET /?io=60, a 60 ms wait
	// on a timer (a data fetch) and then a small page (NodeAsyncItems
	// cards, a render of about 2 ms).
	ScenarioNodeAsync = "node-async"
	// ScenarioNodeReactQuiet and ScenarioNodeAsyncQuiet are the same
	// workloads on workers that report no saturation (Sluice-Saturation
	// dropped, as from a worker not run by sluice-worker): sluice's
	// per-worker limit then has only their throughput to go by.
	ScenarioNodeReactQuiet = ScenarioNodeReact + quiet
	ScenarioNodeAsyncQuiet = ScenarioNodeAsync + quiet

	quiet = "-quiet"
)

// DefaultNodeWorker is the worker script, relative to the repository root.
const DefaultNodeWorker = "examples/react-ssr/worker.js"

// NodeReactItems is how many listing cards the CPU-bound workload's page
// has: the example's page has 200 (~620 KB), which took 34-47 ms of CPU
// a render on the suite's machine, three times the ~12 ms render of a
// typical SSR page (the seed's renderers); 60 cards (~190 KB) come near it.
// Options.NodeReactItems changes it.
const NodeReactItems = 60

// NodeAsyncItems is how many listing cards the async workload's page has
// (~64 KB, about 2 ms of CPU): the ~2 ms render after the I/O the async
// workload stands for.
const NodeAsyncItems = 20

// NodeWorkload is one Node.js scenario: what is asked of the workers and
// which setups are compared on it.
type NodeWorkload struct {
	Scenario string
	// Query is every request's query string, "?" included.
	Query string
	// QueryMix, if set, appends to Query a query drawn by weight per
	// request (loadgen.Config.QueryMix): requests of mixed costs.
	QueryMix []loadgen.Weighted
	// Items is BENCH_PAGE_ITEMS for the workers: cards per page; 0 keeps
	// the example's 200.
	Items int
	// Renders is BENCH_RENDERS for the workers: each page rendered that
	// many times over (a heavier page); 0 or 1 renders it once.
	Renders int
	// IOWait is the wait each request makes before it renders; 0 for a
	// CPU-bound workload.
	IOWait time.Duration
	// Quiet runs the workers with BENCH_NO_SATURATION=1: they report no
	// saturation.
	Quiet bool
	// CapacityClients is the number of closed-loop clients per worker in
	// the capacity measurement: enough that the worker never idles.
	CapacityClients int
	// Fixed lists the fixed per-worker concurrencies of the sweep
	// (setups sluice-fixed-N).
	Fixed []int
	// HAProxyBest adds nginx -> HAProxy (500 ms) with maxconn set to the
	// sweep's best N, once the sweep has run (when N > 1).
	HAProxyBest bool
	// P99Target is the bound on sluice's p99 of successes.
	P99Target time.Duration
}

// NodeWorkloads returns the Node.js scenarios' workloads: each of the two
// with workers that report their saturation, then with workers that do
// not.
func NodeWorkloads() []NodeWorkload {
	ws := reportingNodeWorkloads()
	for _, w := range reportingNodeWorkloads() {
		w.Scenario += quiet
		w.Quiet = true
		ws = append(ws, w)
	}
	return ws
}

func reportingNodeWorkloads() []NodeWorkload {
	return []NodeWorkload{
		{
			Scenario: ScenarioNodeReact, Query: "?page=7", Items: NodeReactItems,
			CapacityClients: CapacityClients,
			Fixed:           []int{1, 2},
			P99Target:       150 * time.Millisecond,
		},
		{
			Scenario: ScenarioNodeAsync, Query: "?io=60", Items: NodeAsyncItems, IOWait: 60 * time.Millisecond,
			// A 60 ms wait and a ~2 ms render: about 31 requests keep
			// one event loop busy; twice that leaves no idle time.
			CapacityClients: 64,
			Fixed:           []int{1, 4, 8, 16, 32},
			HAProxyBest:     true,
			P99Target:       3 * 60 * time.Millisecond,
		},
	}
}

// NodeWorkloadFor returns the workload of a Node.js scenario.
func NodeWorkloadFor(scenario string) (NodeWorkload, bool) {
	for _, w := range NodeWorkloads() {
		if w.Scenario == scenario {
			return w, true
		}
	}
	return NodeWorkload{}, false
}

// IsNodeScenario reports whether scenario runs on Node.js workers.
func IsNodeScenario(scenario string) bool {
	_, ok := NodeWorkloadFor(scenario)
	return ok
}

// Node setup families, as Options.NodeSetups names them.
const (
	NodeFamilySluice     = SetupSluice       // sluice, per-worker concurrency left to its default (auto)
	NodeFamilyFixed      = "sluice-fixed"    // sluice-fixed-N, the sweep
	NodeFamilyHAProxy    = SetupNginxHA500ms // nginx -> HAProxy, 500 ms queue, maxconn 1 (and the best N)
	NodeFamilyRoundRobin = SetupRoundRobin   // no admission
)

// NodeSetupFamilies lists the Node.js scenarios' setup families in table
// order.
func NodeSetupFamilies() []string {
	return []string{NodeFamilySluice, NodeFamilyFixed, NodeFamilyHAProxy, NodeFamilyRoundRobin}
}

// FixedSetup names sluice with a fixed per-worker concurrency n.
func FixedSetup(n int) string { return NodeFamilyFixed + "-" + strconv.Itoa(n) }

// HAProxyMaxConnSetup names nginx -> HAProxy (500 ms) with maxconn n per
// worker; n = 1 is the plain nginx-haproxy-500ms.
func HAProxyMaxConnSetup(n int) string {
	if n <= 1 {
		return SetupNginxHA500ms
	}
	return SetupNginxHA500ms + "-maxconn-" + strconv.Itoa(n)
}

// nodeSetup is one setup of a Node.js scenario, not started yet.
type nodeSetup struct {
	name   string
	family string
	// concurrency is sluice's per-upstream concurrency (0: auto) or
	// HAProxy's maxconn.
	concurrency int
}

// nodeFamilyBaseline is sluice at its defaults from the baseline binary
// (Options.HopBaseline), run beside NodeFamilySluice when one is given:
// a before/after in one run.
const nodeFamilyBaseline = HopBaseline

// nodeSetups returns the first pass's setups of w (all but HAProxy at the
// sweep's best N), those of the families listed, in table order.
// HAProxy needs both binaries; the baseline, a baseline binary.
func nodeSetups(w NodeWorkload, families []string, haproxy, baseline bool) []nodeSetup {
	var out []nodeSetup
	for _, f := range NodeSetupFamilies() {
		if !slices.Contains(families, f) {
			continue
		}
		switch f {
		case NodeFamilySluice:
			out = append(out, nodeSetup{name: SetupSluice, family: f})
			if baseline {
				out = append(out, nodeSetup{name: HopBaseline, family: nodeFamilyBaseline})
			}
		case NodeFamilyFixed:
			for _, n := range w.Fixed {
				out = append(out, nodeSetup{name: FixedSetup(n), family: f, concurrency: n})
			}
		case NodeFamilyHAProxy:
			if haproxy {
				out = append(out, nodeSetup{name: HAProxyMaxConnSetup(1), family: f, concurrency: 1})
			}
		case NodeFamilyRoundRobin:
			out = append(out, nodeSetup{name: SetupRoundRobin, family: f})
		}
	}
	return out
}

//go:embed node/counters.js
var nodeCounters []byte

// StartNodeWorkers starts n Node.js workers (nodeBin script, with
// internal/eval/node/counters.js preloaded, written to logDir) on free ports of
// 127.0.0.1, for workload w (BENCH_PAGE_ITEMS=w.Items when w.Items > 0,
// BENCH_RENDERS=w.Renders when above 1, BENCH_NO_SATURATION=1 when
// w.Quiet), and waits until each answers
// readyPath. Their output goes to logDir/node-worker-N.log. They run on
// l's worker CPUs.
func StartNodeWorkers(ctx context.Context, nodeBin, script string, n int, w NodeWorkload, readyPath, logDir string, l Layout) (*Pool, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("eval: the Node.js worker: %w (run from the repository root, or give -node-worker)", err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules")); err != nil {
		return nil, fmt.Errorf("eval: the Node.js worker's dependencies are not installed (cd %s && npm ci): %w", filepath.Dir(script), err)
	}
	preload := filepath.Join(logDir, "eval-counters.js")
	if err := os.WriteFile(preload, nodeCounters, 0o644); err != nil {
		return nil, err
	}
	return startWorkers(ctx, n, readyPath, logDir, l, func(i, port int) procSpec {
		env := []string{"PORT=" + strconv.Itoa(port), "NODE_ENV=production"}
		if w.Items > 0 {
			env = append(env, "BENCH_PAGE_ITEMS="+strconv.Itoa(w.Items))
		}
		if w.Renders > 1 {
			env = append(env, "BENCH_RENDERS="+strconv.Itoa(w.Renders))
		}
		if w.Quiet {
			env = append(env, "BENCH_NO_SATURATION=1")
		}
		return procSpec{name: fmt.Sprintf("node-worker-%d", i+1), env: env, argv: []string{nodeBin, "-r", preload, script}}
	})
}

// NodeReadyPath is the example worker's readiness path, answered by
// sluice-worker.
const NodeReadyPath = "/healthz"

// bestFixed returns the concurrency of the sweep's best setup: the
// highest goodput summed over every load and client mode measured (the
// median where a point ran more than once), the smaller N on a tie. ok is
// false when no sweep setup ran.
func bestFixed(runs []*RunResult, fixed []int) (n int, ok bool) {
	best := -1.0
	for _, c := range fixed {
		name := FixedSetup(c)
		sum, seen := 0.0, false
		for _, r := range runs {
			if r.Setup == name && len(r.Reports) > 0 {
				sum += r.Reports[0].Total.Goodput
				seen = true
			}
		}
		if seen && sum > best {
			best, n, ok = sum, c, true
		}
	}
	return n, ok
}

func joinInts(xs []int) string {
	var s []string
	for _, x := range xs {
		s = append(s, strconv.Itoa(x))
	}
	return strings.Join(s, ", ")
}
