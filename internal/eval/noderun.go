package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// NodeMultiples are the offered loads of the Node.js scenarios, in
// capacities.
func NodeMultiples() []float64 { return []float64{1, 2, 4, 8} }

// NodeInfo records a Node.js workload as it was run.
type NodeInfo struct {
	Scenario string `json:"scenario"`
	Worker   string `json:"worker"` // the script, as started
	Node     string `json:"node"`   // node --version
	Query    string `json:"query"`
	// QueryMix is what was drawn per request and appended to Query, by
	// weight; nil: Query alone.
	QueryMix []loadgen.Weighted `json:"query_mix,omitempty"`
	Items    int                `json:"page_items,omitempty"`   // BENCH_PAGE_ITEMS; 0: the example's 200
	Renders  int                `json:"page_renders,omitempty"` // BENCH_RENDERS; 0: once
	IOWait   time.Duration      `json:"io_wait_ns,omitempty"`
	Workers  int                `json:"workers"`
	// Capacity is what the workers served closed-loop, straight, with
	// CapacityClients clients each, NodeCapacityRuns times; CapacityRPS is the
	// highest, as noise on the shared machine only ever lowers a
	// closed-loop throughput. CapacityLatency is the mean latency of each
	// measurement, ms.
	CapacityClients int       `json:"capacity_clients_per_worker"`
	Capacity        []float64 `json:"capacity_rps_runs"`
	CapacityRPS     float64   `json:"capacity_rps"`
	CapacityLatency []float64 `json:"capacity_mean_latency_ms"`
	Fixed           []int     `json:"fixed_sweep"`
	// BestFixed is the sweep's best N (0 if the sweep did not run).
	BestFixed int           `json:"best_fixed,omitempty"`
	P99Target time.Duration `json:"p99_target_ns"`
}

// NodeCapacityRuns is how many times a Node.js workload's capacity is
// measured. The highest counts: on a shared machine one quiet measurement
// in five is likelier than one in three.
const NodeCapacityRuns = 5

// nodeFile is a Node.js scenario's JSON file.
type nodeFile struct {
	Scenario    string       `json:"scenario"`
	Environment Environment  `json:"environment"`
	Workload    NodeInfo     `json:"workload"`
	Runs        []*RunResult `json:"runs"`
}

// nodeScenario runs workload w: two fresh Node.js workers, their capacity,
// then every setup at each of NodeMultiples in each client mode, setups
// interleaved at each point (the fixed sweep first, in a pass of its own,
// when nginx -> HAProxy is to run at its best N beside the others); then
// the setup without admission.
func (s *Suite) nodeScenario(ctx context.Context, w NodeWorkload) error {
	if w.Scenario == ScenarioNodeReact || w.Scenario == ScenarioNodeReactQuiet {
		if s.o.NodeReactItems != 0 {
			w.Items = max(s.o.NodeReactItems, 0)
		}
		w.Renders = s.o.NodeReactRenders
		w.QueryMix = s.o.NodeReactMix
	}
	dir := filepath.Join(s.o.WorkDir, w.Scenario)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pool, err := StartNodeWorkers(ctx, s.o.NodeBin, s.o.NodeWorker, s.o.Workers, w, NodeReadyPath, dir, s.o.Layout)
	if err != nil {
		return err
	}
	s.libs = append(s.libs, pool) // its CPU is the suite's, not the noise
	var fronts []*Front
	defer func() { s.stopNode(pool, fronts) }()

	info := NodeInfo{Scenario: w.Scenario, Worker: s.o.NodeWorker, Node: ToolVersion(s.o.NodeBin, "--version"),
		Query: w.Query, QueryMix: w.QueryMix, Items: w.Items, Renders: w.Renders, IOWait: w.IOWait, Workers: len(pool.Addrs),
		CapacityClients: w.CapacityClients, Fixed: w.Fixed, P99Target: w.P99Target}
	if err := s.nodeCapacity(ctx, w, pool, &info); err != nil {
		return err
	}

	start := func(ns nodeSetup) (*target, error) {
		t, err := s.startNodeSetup(ctx, w, ns, pool, info.CapacityRPS)
		if err != nil {
			return nil, err
		}
		fronts = append(fronts, t.front)
		return t, nil
	}
	runs, err := s.nodeRuns(ctx, w, &info, start)
	if err != nil {
		return err
	}
	return s.writeNode(w.Scenario, info, runs)
}

// nodeRuns starts every setup of the Node.js scenario with start and
// offers each the scenario's loads; the sweep's best fixed concurrency goes
// into info.
//
// Where HAProxy is to run at the sweep's best N, the sweep runs first, in
// a pass of its own: then HAProxy at N takes its turns beside sluice at
// each point, as every comparison the tables make does, rather than
// minutes after it on a machine whose capacity may have moved since.
func (s *Suite) nodeRuns(ctx context.Context, w NodeWorkload, info *NodeInfo, start func(nodeSetup) (*target, error)) ([]*RunResult, error) {
	haproxy := s.o.NginxBin != "" && s.o.HAProxyBin != ""
	sweepFirst := w.HAProxyBest && haproxy && slices.Contains(s.o.NodeSetups, NodeFamilyHAProxy)
	var passes [nodePasses][]*target
	for _, ns := range nodeSetups(w, s.o.NodeSetups, haproxy, s.o.HopBaseline != "") {
		t, err := start(ns)
		if err != nil {
			return nil, err
		}
		p := nodePass(ns, sweepFirst)
		passes[p] = append(passes[p], t)
	}
	var runs []*RunResult
	load := func(targets []*target) error {
		more, err := s.nodeLoads(ctx, w, targets)
		runs = append(runs, more...)
		return err
	}
	if err := load(passes[passSweep]); err != nil {
		return nil, err
	}
	if sweepFirst {
		if n := s.noteBestFixed(w, runs, info); n > 1 {
			t, err := start(nodeSetup{name: HAProxyMaxConnSetup(n), family: NodeFamilyHAProxy, concurrency: n})
			if err != nil {
				return nil, err
			}
			passes[passMain] = append(passes[passMain], t)
		}
	}
	if err := load(passes[passMain]); err != nil {
		return nil, err
	}
	if !sweepFirst {
		s.noteBestFixed(w, runs, info)
	}
	if err := load(passes[passLast]); err != nil {
		return nil, err
	}
	return runs, nil
}

// noteBestFixed puts the sweep's best fixed concurrency among runs into
// info and returns it; 0 if no sweep setup ran.
func (s *Suite) noteBestFixed(w NodeWorkload, runs []*RunResult, info *NodeInfo) int {
	n, ok := bestFixed(runs, w.Fixed)
	if !ok {
		return 0
	}
	info.BestFixed = n
	s.log.Info("the sweep's best fixed concurrency", "scenario", w.Scenario, "n", n)
	return n
}

// The passes of a Node.js scenario, in the order they run.
const (
	passSweep = iota // the fixed sweep, when HAProxy is to run at its best N
	passMain         // every other setup, taking turns at each point
	passLast         // the setup without admission
	nodePasses
)

// nodePass returns the pass setup ns runs in. The setup without admission
// buries the workers at 2x and beyond: they stop answering even the
// health checks of the other fronts (sluice then drops and re-adds them)
// and are restarted. It runs last, so that it leaves no mark on the
// others.
func nodePass(ns nodeSetup, sweepFirst bool) int {
	switch {
	case ns.family == NodeFamilyRoundRobin:
		return passLast
	case ns.family == NodeFamilyFixed && sweepFirst:
		return passSweep
	}
	return passMain
}

// stopNode stops a Node.js scenario's fronts and workers and forgets
// them and their targets.
func (s *Suite) stopNode(pool *Pool, fronts []*Front) {
	for _, f := range fronts {
		f.Stop()
		s.fronts = slices.DeleteFunc(s.fronts, func(g *Front) bool { return g == f })
	}
	pool.Stop()
	s.libs = slices.DeleteFunc(s.libs, func(p *Pool) bool { return p == pool })
	for k, t := range s.targets {
		if t.pool == pool {
			delete(s.targets, k)
		}
	}
}

// nodeCapacity warms the Node.js workers and measures their capacity
// straight, NodeCapacityRuns times, into info.
func (s *Suite) nodeCapacity(ctx context.Context, w NodeWorkload, pool *Pool, info *NodeInfo) error {
	var direct []string
	for _, a := range pool.Addrs {
		direct = append(direct, "http://"+a+"/"+w.Query)
	}
	// V8 compiles the renderer as it runs: a first measurement, not kept,
	// leaves the workers warm; so after every restart.
	pool.Warm = func(ctx context.Context) error {
		_, err := CapacityMix(ctx, direct, w.CapacityClients, 2*time.Second, w.QueryMix)
		return err
	}
	if err := pool.Warm(ctx); err != nil {
		return err
	}
	for range NodeCapacityRuns {
		s.waitQuiet(ctx)
		r, err := CapacityMix(ctx, direct, w.CapacityClients, s.o.CapacityTime, w.QueryMix)
		if err != nil {
			return err
		}
		if r.Successes == 0 {
			return fmt.Errorf("eval: %s: capacity of %v: no success (%d errors)", w.Scenario, direct, r.Errors)
		}
		info.Capacity = append(info.Capacity, r.Rate)
		info.CapacityLatency = append(info.CapacityLatency, float64(r.MeanLatency)/float64(time.Millisecond))
	}
	info.CapacityRPS = slices.Max(info.Capacity)
	s.log.Info("capacity of the Node.js workers", "scenario", w.Scenario, "rps", round1(info.CapacityRPS), "runs", info.Capacity)
	return nil
}

// startNodeSetup starts the front of one Node.js setup over pool.
func (s *Suite) startNodeSetup(ctx context.Context, w NodeWorkload, ns nodeSetup, pool *Pool, capacity float64) (*target, error) {
	t := &target{name: ns.name, pool: pool, cap10: capacity}
	dir := filepath.Join(s.o.WorkDir, w.Scenario, ns.name)
	name := w.Scenario + "-" + ns.name
	var err error
	switch ns.family {
	case NodeFamilySluice, NodeFamilyFixed:
		t.front, err = startSluice(ctx, name, s.o.SluiceBin, SluiceConfig{Workers: pool.Addrs, Concurrency: ns.concurrency}, dir)
	case nodeFamilyBaseline:
		t.front, err = startSluice(ctx, name, s.o.HopBaseline, SluiceConfig{Workers: pool.Addrs}, dir)
	case NodeFamilyHAProxy:
		t.front, err = startNginxHAProxy(ctx, name, s.o.NginxBin, s.o.HAProxyBin,
			HAProxyConfig{Workers: pool.Addrs, QueueTimeout: 500 * time.Millisecond, MaxConn: ns.concurrency}, dir, getReady(w.Query))
	case NodeFamilyRoundRobin:
		t.front, err = s.startRoundRobin(ctx, name, pool.Addrs)
	default:
		err = fmt.Errorf("eval: unknown Node.js setup family %q", ns.family)
	}
	if err != nil {
		return nil, err
	}
	t.url = t.front.URL
	s.fronts = append(s.fronts, t.front)
	s.targets[w.Scenario+"/"+ns.name] = t // for restart's requests through every front
	return t, nil
}

// nodeLoads offers each of NodeMultiples to every target, in each client
// mode, one constant phase each; at each point the targets take turns
// (in the order turns gives), so that a noisy minute does not fall on one
// setup alone.
func (s *Suite) nodeLoads(ctx context.Context, w NodeWorkload, targets []*target) ([]*RunResult, error) {
	var runs []*RunResult
	point := 0
	for _, ka := range s.o.KeepAlive {
		for _, m := range NodeMultiples() {
			for _, t := range turns(targets, point) {
				r, err := s.run(ctx, w.Scenario, multipleName(m), m, t, ka, 0, stream{
					query:  w.Query,
					tweak:  mixQuery(w.QueryMix),
					phases: []loadgen.Phase{{Name: multipleName(m), Rate: m * t.cap10, Duration: s.o.Phase}},
				})
				if err != nil {
					return nil, err
				}
				if t.front.Admin != "" {
					r.WorkerLimits = workerLimits(ctx, t.front.Admin)
				}
				runs = append(runs, r)
			}
			point++
		}
	}
	return runs, nil
}

// turns returns the order in which targets take their turns at the
// point-th point: as listed at even points, the reverse at odd ones. A
// setup that always went first would always meet the workers straight
// after the quiet wait, and one that always went last, straight after
// another setup's overload; alternating spreads both over every setup.
func turns(targets []*target, point int) []*target {
	if point%2 == 0 {
		return targets
	}
	r := slices.Clone(targets)
	slices.Reverse(r)
	return r
}

// workerLimits reads the per-worker concurrency limits from sluice's admin
// /stats (proxy.endpoints[].limit), or nil if it cannot: a diagnostic,
// never a reason to stop the run.
func workerLimits(ctx context.Context, admin string) []int {
	var buf bytes.Buffer
	if status, err := get(ctx, newClient(2*time.Second), "http://"+admin+"/stats", &buf); err != nil || status != 200 {
		return nil
	}
	return parseWorkerLimits(buf.Bytes())
}

func parseWorkerLimits(b []byte) []int {
	var st struct {
		Proxy struct {
			Endpoints []struct {
				Limit int `json:"limit"`
			} `json:"endpoints"`
		} `json:"proxy"`
	}
	if json.Unmarshal(b, &st) != nil {
		return nil
	}
	var out []int
	for _, e := range st.Proxy.Endpoints {
		out = append(out, e.Limit)
	}
	return out
}
