package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/loadgen"
)

// Setup names: the fronts compared, each a way to reach the same work.
const (
	SetupSluice       = "sluice"              // sluice serve, upstreams = the workers
	SetupRoundRobin   = "round-robin"         // a Go reverse proxy, no admission control
	SetupNginxHA1s    = "nginx-haproxy-1s"    // nginx -> HAProxy, timeout queue 1s
	SetupNginxHA500ms = "nginx-haproxy-500ms" // nginx -> HAProxy, timeout queue 500ms
	SetupLibPlain     = "lib-plain"           // net/http + the demo app, GOMAXPROCS 2
	SetupLibSluice    = "lib-sluice"          // the same behind sluice's admission middleware
	// SetupLibSluiceGradient is lib-sluice with the one change
	// server.backpressure.algorithm: gradient, the README's advice for
	// CPU-bound handlers.
	SetupLibSluiceGradient = "lib-sluice-gradient"
	// SetupLibSluiceFixed is lib-sluice with a fixed limit of GOMAXPROCS
	// (algorithm: fixed, initialLimit: LibProcs): one CPU-bound render per
	// P, the README's advice for CPU-bound handlers.
	SetupLibSluiceFixed = "lib-sluice-fixed"

	// SetupSluiceNoCoDel is a diagnostic, not run unless asked for: sluice
	// with the one change overload.codel.enabled: false, to show what
	// CoDel does to goodput and latency.
	SetupSluiceNoCoDel = "sluice-no-codel"
)

// AllSetups lists the setups the suite runs by default, in the order
// tables show them.
func AllSetups() []string {
	return []string{SetupSluice, SetupRoundRobin, SetupNginxHA1s, SetupNginxHA500ms, SetupLibPlain, SetupLibSluice, SetupLibSluiceGradient, SetupLibSluiceFixed}
}

// KnownSetups lists every setup, diagnostics included, in table order.
func KnownSetups() []string {
	return []string{SetupSluice, SetupSluiceNoCoDel, SetupRoundRobin, SetupNginxHA1s, SetupNginxHA500ms, SetupLibPlain, SetupLibSluice, SetupLibSluiceGradient, SetupLibSluiceFixed}
}

// isLib reports whether setup is a library-face server (its own process
// renders, in-process, instead of the workers).
func isLib(setup string) bool {
	return setup == SetupLibPlain || setup == SetupLibSluice || setup == SetupLibSluiceGradient || setup == SetupLibSluiceFixed
}

// Options configure a Suite. Zero fields take the defaults named.
type Options struct {
	// SluiceBin is the sluice binary: the workers (demo-worker) and the
	// sluice front (serve). Required.
	SluiceBin string
	// NginxBin and HAProxyBin run the nginx -> HAProxy setups; empty
	// leaves those setups out.
	NginxBin, HAProxyBin string
	// OutDir receives the results (JSON, SVG, Markdown). Required.
	OutDir string
	// WorkDir receives configuration files and process logs. Required.
	WorkDir string
	// Setups to run; nil means AllSetups (those whose binaries are given).
	Setups []string
	// Workers is the number of demo workers; 0 means 2.
	Workers int
	// UnitsPerMs is the demo work calibration; 0 means calibrate now.
	UnitsPerMs float64
	// Phase is the length of a constant-load phase; 0 means 10 s.
	Phase time.Duration
	// KeepAlive lists the client modes to run; nil means on, then off.
	KeepAlive []bool
	// Repeats is how many times the repeated point runs; 0 means 3.
	Repeats int
	// DrainBound bounds the wait for the workers to finish after a run;
	// past it they are restarted. 0 means 30 s.
	DrainBound time.Duration
	// CapacityTime is the length of one capacity measurement; 0 means 5 s.
	CapacityTime time.Duration
	// The machine is shared. MaxOthers is the CPU, in cores, the rest of
	// the machine may use during a run before the run counts as noisy and
	// is run again, at most NoisyRetries times (the quietest attempt is
	// kept, whatever its result). Before each run and each capacity
	// measurement the suite waits, at most QuietWait, for the rest of the
	// machine to use less than MaxOthers. Zero values mean 0.25 cores, 1
	// retry and 30 s; a negative MaxOthers or NoisyRetries turns the check
	// or the retries off.
	MaxOthers    float64
	NoisyRetries int
	QuietWait    time.Duration
	// Logger receives progress; nil means discard.
	Logger *slog.Logger

	// NoDemo leaves out the Go demo workers, their calibration, capacity
	// and setups: for a run of the Node.js scenarios only.
	NoDemo bool
	// NodeBin is the node binary of the Node.js scenarios; "" means
	// "node" on PATH. NodeWorker is the worker script; "" means
	// DefaultNodeWorker (relative to the working directory: run from the
	// repository root).
	NodeBin, NodeWorker string
	// NodeSetups lists the Node.js scenarios' setup families to run
	// (see NodeSetupFamilies); nil means all of them.
	NodeSetups []string
	// NodeReactItems is the listing cards of scenario node-react's page:
	// 0 means NodeReactItems, negative the example's whole page (200).
	NodeReactItems int
	// NodeReactRenders renders scenario node-react's page that many times
	// a request (BENCH_RENDERS): a heavier render; 0 or 1 once.
	NodeReactRenders int
	// NodeReactMix, if set, draws each node-react request's query from
	// it by weight, appended to the scenario's own (for example
	// "cards=10" 80% and "cards=200" 20%: pages of mixed sizes), in the
	// capacity measurement and the load alike. The cards a request asks
	// for are the first of the NodeReactItems its worker keeps.
	NodeReactMix []loadgen.Weighted
	// HopRate is scenario hop-cpu's fixed offered rate, requests per
	// second; 0 means HopCPURate. On a machine busy with other work an
	// open loop near the fronts' capacity collapses into timeouts: a
	// lower rate keeps the comparison.
	HopRate float64
	// HypernovaWorker is scenario hypernova's worker script; "" means
	// DefaultHypernovaWorker (relative to the working directory).
	HypernovaWorker string
	// HypernovaItems is the listing cards of scenario hypernova's page; 0
	// means HypernovaItems (about 80 KB).
	HypernovaItems int
	// RestartRounds is how many times scenario hypernova rolls each
	// front's workers (each roll beside a run without one, the fronts
	// taking turns); 0 means 1. The table gives the median.
	RestartRounds int
	// HopBaseline is a second sluice binary that scenario hop-cpu, and the
	// Node.js scenarios with their sluice family, measure
	// beside SluiceBin (setup sluice-before): an older build, for a
	// before/after in one run. Empty leaves it out.
	HopBaseline string
	// Layout is where the workers run apart from the harness and the
	// fronts; the zero Layout shares every CPU. The caller pins the
	// harness itself (PinProcess) before the suite starts anything.
	Layout Layout
}

func (o Options) withDefaults() Options {
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.Phase == 0 {
		o.Phase = 10 * time.Second
	}
	if o.KeepAlive == nil {
		o.KeepAlive = []bool{true, false}
	}
	if o.Repeats == 0 {
		o.Repeats = 3
	}
	if o.DrainBound == 0 {
		o.DrainBound = 30 * time.Second
	}
	if o.CapacityTime == 0 {
		o.CapacityTime = 5 * time.Second
	}
	if o.MaxOthers == 0 {
		o.MaxOthers = 0.25
	}
	if o.NoisyRetries == 0 {
		o.NoisyRetries = 1
	}
	if o.QuietWait == 0 {
		o.QuietWait = 30 * time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.NodeBin == "" {
		o.NodeBin = "node"
	}
	if o.NodeWorker == "" {
		o.NodeWorker = DefaultNodeWorker
	}
	if o.HypernovaWorker == "" {
		o.HypernovaWorker = DefaultHypernovaWorker
	}
	if o.RestartRounds == 0 {
		o.RestartRounds = 1
	}
	if o.NodeSetups == nil {
		o.NodeSetups = NodeSetupFamilies()
	}
	if o.Setups == nil {
		for _, s := range AllSetups() {
			if strings.HasPrefix(s, "nginx-haproxy") && (o.NginxBin == "" || o.HAProxyBin == "") {
				continue
			}
			o.Setups = append(o.Setups, s)
		}
	}
	return o
}

// CapacityClients is the number of closed-loop clients per core of
// renderer in a capacity measurement: two, so that a request always waits
// while one renders and the renderer never idles between a response and
// the client's next request.
const CapacityClients = 2

// Capacities are the closed-loop throughputs the load multiples refer to,
// each the median of three measurements (all three kept).
type Capacities struct {
	// Workers at ?cpu=10 and ?cpu=20, CapacityClients per worker, direct.
	Workers10, Workers20 []float64
	// Lib at ?cpu=10 and ?cpu=20: the library-face plain server,
	// CapacityClients per GOMAXPROCS.
	Lib10, Lib20 []float64
}

// target is one setup ready to be loaded.
type target struct {
	name  string
	url   string // base URL, ending in "/"
	front *Front // the processes between client and renderer, if any
	pool  *Pool  // who renders
	// quiet are the pools of other setups on the same machine, idle
	// before each of its runs as its own is: a setup's backlog must not
	// render through the next one's turn.
	quiet []*Pool
	cap10 float64
	cap20 float64
}

// Suite runs the scenarios against setups it starts once and stops in
// Close. Not safe for concurrent use: runs are sequential so that they do
// not share the machine.
type Suite struct {
	o       Options
	log     *slog.Logger
	env     Environment
	workers *Pool
	fronts  []*Front
	libs    []*Pool
	targets map[string]*target
}

// NewSuite calibrates the work, starts the workers, measures capacity and
// starts every setup. On error everything started is stopped.
func NewSuite(ctx context.Context, o Options) (_ *Suite, err error) {
	if o.SluiceBin == "" || o.OutDir == "" || o.WorkDir == "" {
		return nil, errors.New("eval: Options.SluiceBin, OutDir and WorkDir are required")
	}
	o = o.withDefaults()
	s := &Suite{o: o, log: o.Logger, targets: map[string]*target{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	for _, d := range []string{o.OutDir, o.WorkDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if o.NoDemo {
		s.env = describeEnvironment(o)
		s.env.Workers = 0
		return s, nil
	}
	if o.UnitsPerMs == 0 {
		s.waitQuiet(ctx)
		o.UnitsPerMs = demo.Calibrate(time.Second).UnitsPerMilli()
		s.o.UnitsPerMs = o.UnitsPerMs
		s.log.Info("calibrated demo work", "unitsPerMs", o.UnitsPerMs)
	}
	s.env = describeEnvironment(o)

	w10, w20, err := s.startWorkers(ctx)
	if err != nil {
		return nil, err
	}
	for _, name := range o.Setups {
		t, err := s.startSetup(ctx, name, w10, w20)
		if err != nil {
			return nil, err
		}
		if t.front != nil && len(t.front.Procs) > 0 {
			s.fronts = append(s.fronts, t.front)
		}
		s.targets[name] = t
	}
	if err := s.measureLib(ctx); err != nil {
		return nil, err
	}
	return s, s.writeJSON("environment.json", s.env)
}

// startWorkers starts the demo workers and measures their capacity at
// ?cpu=10 and ?cpu=20, in requests per second.
func (s *Suite) startWorkers(ctx context.Context) (cap10, cap20 float64, err error) {
	o := s.o
	if s.workers, err = StartWorkers(ctx, o.SluiceBin, o.Workers, o.UnitsPerMs, o.WorkDir, o.Layout); err != nil {
		return 0, 0, err
	}
	var urls10, urls20 []string
	for _, a := range s.workers.Addrs {
		urls10 = append(urls10, "http://"+a+"/?cpu=10")
		urls20 = append(urls20, "http://"+a+"/?cpu=20")
	}
	if s.env.Capacity.Workers10, s.env.Capacity.Workers20, err = s.measure(ctx, urls10, urls20, CapacityClients); err != nil {
		return 0, 0, err
	}
	cap10, cap20 = Median(s.env.Capacity.Workers10), Median(s.env.Capacity.Workers20)
	s.log.Info("capacity of the workers", "cpu10", cap10, "cpu20", cap20)
	return cap10, cap20, nil
}

// startSetup starts setup name's front before the demo workers (or, for
// the library face, its own server) and returns it as a target of the
// workers' capacity.
func (s *Suite) startSetup(ctx context.Context, name string, cap10, cap20 float64) (*target, error) {
	o := s.o
	t := &target{name: name, pool: s.workers, cap10: cap10, cap20: cap20}
	dir := filepath.Join(o.WorkDir, name)
	var err error
	switch name {
	case SetupSluice:
		t.front, err = StartSluice(ctx, name, o.SluiceBin, s.workers.Addrs, dir, "")
	case SetupSluiceNoCoDel:
		t.front, err = StartSluice(ctx, name, o.SluiceBin, s.workers.Addrs, dir, "overload:\n  codel:\n    enabled: false\n")
	case SetupRoundRobin:
		t.front, err = s.startRoundRobin(ctx, name, s.workers.Addrs)
	case SetupNginxHA1s:
		t.front, err = StartNginxHAProxy(ctx, name, o.NginxBin, o.HAProxyBin, s.workers.Addrs, time.Second, dir)
	case SetupNginxHA500ms:
		t.front, err = StartNginxHAProxy(ctx, name, o.NginxBin, o.HAProxyBin, s.workers.Addrs, 500*time.Millisecond, dir)
	case SetupLibPlain, SetupLibSluice, SetupLibSluiceGradient, SetupLibSluiceFixed:
		t.pool, err = s.startLib(ctx, name)
		if err == nil {
			t.front = &Front{Name: name, URL: "http://" + t.pool.Addrs[0] + "/"}
		}
	default:
		return nil, fmt.Errorf("eval: unknown setup %q", name)
	}
	if err != nil {
		return nil, err
	}
	t.url = t.front.URL
	return t, nil
}

// measureLib measures the library-face server's capacity, when it runs,
// and makes it the capacity of every library-face setup.
func (s *Suite) measureLib(ctx context.Context) error {
	lib := s.targets[SetupLibPlain]
	if lib == nil {
		return nil
	}
	var err error
	if s.env.Capacity.Lib10, s.env.Capacity.Lib20, err = s.measure(ctx, []string{lib.url + "?cpu=10"}, []string{lib.url + "?cpu=20"}, LibProcs*CapacityClients); err != nil {
		return err
	}
	l10, l20 := Median(s.env.Capacity.Lib10), Median(s.env.Capacity.Lib20)
	s.log.Info("capacity of the library-face server", "cpu10", l10, "cpu20", l20)
	for _, name := range []string{SetupLibPlain, SetupLibSluice, SetupLibSluiceGradient, SetupLibSluiceFixed} {
		if t := s.targets[name]; t != nil {
			t.cap10, t.cap20 = l10, l20
		}
	}
	return nil
}

// measure runs Capacity three times for each of two sets of URLs (the
// two page costs), alternating, so that a noisy moment on the machine
// does not fall on one cost alone.
func (s *Suite) measure(ctx context.Context, a, b []string, perURL int) (ra, rb []float64, err error) {
	for range 3 {
		s.waitQuiet(ctx)
		for _, m := range []struct {
			urls []string
			out  *[]float64
		}{{a, &ra}, {b, &rb}} {
			r, err := Capacity(ctx, m.urls, perURL, s.o.CapacityTime, false)
			if err != nil {
				return nil, nil, err
			}
			if r.Successes == 0 {
				return nil, nil, fmt.Errorf("eval: capacity of %v: no success (%d errors)", m.urls, r.Errors)
			}
			*m.out = append(*m.out, r.Rate)
		}
	}
	return ra, rb, nil
}

func (s *Suite) startRoundRobin(ctx context.Context, name string, upstreams []string) (*Front, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	return StartSelf(ctx, name, addr, RoundRobinReadyPath, s.o.WorkDir, nil,
		"rr-proxy", "-listen", addr, "-upstreams", strings.Join(upstreams, ","))
}

func (s *Suite) startLib(ctx context.Context, name string) (*Pool, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := []string{self, "lib-server", "-listen", addr, "-units", strconv.FormatFloat(s.o.UnitsPerMs, 'f', -1, 64)}
	switch name {
	case SetupLibSluice:
		args = append(args, "-admission")
	case SetupLibSluiceGradient:
		args = append(args, "-admission", "-algorithm", config.AlgorithmGradient)
	case SetupLibSluiceFixed:
		args = append(args, "-admission", "-algorithm", config.AlgorithmFixed, "-initial-limit", strconv.Itoa(LibProcs))
	}
	p, err := StartPool(ctx, name, addr, s.o.WorkDir, []string{"GOMAXPROCS=" + strconv.Itoa(LibProcs)}, demo.ReadyPath, args...)
	if err != nil {
		return nil, err
	}
	s.libs = append(s.libs, p)
	return p, nil
}

// Close stops every process the suite started.
func (s *Suite) Close() {
	for i := len(s.fronts) - 1; i >= 0; i-- {
		s.fronts[i].Stop()
	}
	for _, p := range s.libs {
		p.Stop()
	}
	if s.workers != nil {
		s.workers.Stop()
	}
}

// RoundRobinReadyPath is answered by the round-robin proxy itself.
const RoundRobinReadyPath = "/__eval/ready"

// Environment records what the figures depend on.
type Environment struct {
	Started    time.Time  `json:"started"`
	CPUs       int        `json:"nproc"`
	Layout     string     `json:"layout"`
	CPUModel   string     `json:"cpu_model"`
	Kernel     string     `json:"kernel"`
	Go         string     `json:"go"`
	Nginx      string     `json:"nginx,omitempty"`
	HAProxy    string     `json:"haproxy,omitempty"`
	Sluice     string     `json:"sluice"`
	Commit     string     `json:"commit,omitempty"`
	UnitsPerMs float64    `json:"demo_units_per_ms"`
	Workers    int        `json:"workers"`
	LibProcs   int        `json:"lib_gomaxprocs"`
	Phase      string     `json:"phase"`
	LoadAvg    float64    `json:"loadavg_at_start"`
	Capacity   Capacities `json:"capacity_rps"`
}

func describeEnvironment(o Options) Environment {
	e := Environment{
		Started:    time.Now().UTC(),
		CPUs:       runtime.NumCPU(),
		Layout:     o.Layout.String(),
		CPUModel:   cpuModel(),
		Go:         runtime.Version(),
		Sluice:     ToolVersion(o.SluiceBin, "version"),
		UnitsPerMs: o.UnitsPerMs,
		Workers:    o.Workers,
		LibProcs:   LibProcs,
		Phase:      o.Phase.String(),
		LoadAvg:    demo.LoadAverage(),
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		e.Kernel = strings.TrimSpace(string(b))
	}
	if o.NginxBin != "" {
		e.Nginx = ToolVersion(o.NginxBin, "-v")
	}
	if o.HAProxyBin != "" {
		e.HAProxy = ToolVersion(o.HAProxyBin, "-v")
	}
	return e
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "unknown"
	}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}

// Environment returns what the suite recorded about the machine and tools.
func (s *Suite) Environment() Environment { return s.env }

// SetCommit records the source revision measured, in environment.json
// too (not written with Options.NoDemo: that file describes the demo
// workers' run, and each Node.js scenario's file holds its environment).
func (s *Suite) SetCommit(c string) error {
	s.env.Commit = c
	if s.o.NoDemo {
		return nil
	}
	return s.writeJSON("environment.json", s.env)
}

// CPUUse is the CPU time spent during a run and the drain after it, in
// seconds. Others is what the rest of the machine took meanwhile (the
// machine's busy time minus the suite's processes): the noise.
type CPUUse struct {
	Generator float64 `json:"generator_s"`
	Front     float64 `json:"front_s"`
	Renderers float64 `json:"renderers_s"`
	Others    float64 `json:"others_s"`
	Wall      float64 `json:"wall_s"`
	// RenderersLoad and LoadWall are the renderers' CPU time and the wall
	// time while the load ran (the load generator's phases and its wait
	// for the last answers), the drain after it left out: the share of
	// the wall time the workers were busy while there was work to do.
	RenderersLoad float64 `json:"renderers_load_s,omitempty"`
	LoadWall      float64 `json:"load_wall_s,omitempty"`
}

// RunResult is one load run against one setup.
type RunResult struct {
	Scenario  string  `json:"scenario"`
	Setup     string  `json:"setup"`
	Point     string  `json:"point"`
	Multiple  float64 `json:"multiple"` // offered load / Capacity (first phase for multi-phase runs)
	KeepAlive bool    `json:"keepalive"`
	Repeat    int     `json:"repeat"`
	// Capacity is the capacity the multiples refer to, requests per second.
	Capacity float64 `json:"capacity_rps"`
	// Reports are the load generator's reports: one, or one per
	// concurrent stream (scenario capacity-drop).
	Reports []*loadgen.Report `json:"reports"`
	// Series is the time series of all streams together, when there are
	// several; see AllSeries.
	Series []loadgen.Point `json:"series,omitempty"`
	// Successes counts the logical requests that succeeded, all streams.
	Successes int64 `json:"successes"`
	// Rendered counts the renders the pool did from the run's start until
	// it was idle again; Wasted those that served no one. Both are -1 when
	// the renderers could not be read.
	Rendered int64 `json:"rendered"`
	Wasted   int64 `json:"wasted"`
	// PeakInflight is the most renders one renderer process ran at once
	// since it started (cumulative: it never decreases).
	PeakInflight int64 `json:"peak_inflight"`
	// Drain is how long the renderers went on after the last client had
	// its answer or gave up. DrainCapped: they were still rendering at
	// Options.DrainBound and were restarted, so Rendered and Wasted are
	// lower bounds.
	Drain       time.Duration `json:"drain_ns"`
	DrainCapped bool          `json:"drain_capped,omitempty"`
	CPU         CPUUse        `json:"cpu"`
	LoadAvg     float64       `json:"loadavg_before"`
	// Recovery is filled in by scenarios that measure one.
	Recovery *Recovery `json:"recovery,omitempty"`
	// Noisy: the rest of the machine took more than Options.MaxOthers
	// cores during the run, on every attempt. Attempts counts them.
	Noisy    bool `json:"noisy,omitempty"`
	Attempts int  `json:"attempts"`
	// Discarded are the noisier attempts, kept for the record.
	Discarded []*RunResult `json:"discarded,omitempty"`
	// Note explains anything unusual.
	Note string `json:"note,omitempty"`
	// WorkerLimits are the per-worker concurrency limits sluice reported
	// on its admin listener (/stats) after the run, in the Node.js
	// scenarios: what concurrency auto found, or the fixed setting.
	WorkerLimits []int `json:"worker_limits,omitempty"`
}

// AllSeries returns the time series of the run's streams together.
func (r *RunResult) AllSeries() []loadgen.Point {
	if len(r.Series) > 0 || len(r.Reports) == 0 {
		return r.Series
	}
	if len(r.Reports) == 1 {
		return r.Reports[0].Series
	}
	var ss [][]loadgen.Point
	for _, rep := range r.Reports {
		ss = append(ss, rep.Series)
	}
	return MergeSeries(ss...)
}

// OtherCores is the CPU the rest of the machine used during the run, in
// cores.
func (r *RunResult) OtherCores() float64 {
	if r.CPU.Wall <= 0 {
		return 0
	}
	return r.CPU.Others / r.CPU.Wall
}

// stream is one loadgen run of a RunResult; streams of one run are
// started together.
type stream struct {
	query  string
	phases []loadgen.Phase
	tweak  func(*loadgen.Config)
}

// ownCPUTime returns the CPU time of every process of the suite.
func (s *Suite) ownCPUTime() time.Duration {
	d := SelfCPUTime()
	if s.workers != nil {
		d += s.workers.CPUTime()
	}
	for _, p := range s.libs {
		d += p.CPUTime()
	}
	for _, f := range s.fronts {
		d += f.CPUTime()
	}
	return d
}

// othersCores samples, over d, the CPU the rest of the machine uses, in
// cores.
func (s *Suite) othersCores(ctx context.Context, d time.Duration) float64 {
	all0, own0, t0 := MachineCPUTime(), s.ownCPUTime(), time.Now()
	select {
	case <-ctx.Done():
		return 0
	case <-time.After(d):
	}
	others := (MachineCPUTime() - all0) - (s.ownCPUTime() - own0)
	return max(0, others.Seconds()/time.Since(t0).Seconds())
}

// waitQuiet waits, at most Options.QuietWait, until the rest of the
// machine uses less than Options.MaxOthers cores over a second, and
// returns the last sample.
func (s *Suite) waitQuiet(ctx context.Context) float64 {
	if s.o.MaxOthers < 0 {
		return 0
	}
	deadline := time.Now().Add(s.o.QuietWait)
	for {
		c := s.othersCores(ctx, time.Second)
		if c < s.o.MaxOthers || ctx.Err() != nil {
			return c
		}
		if time.Now().After(deadline) {
			s.log.Warn("the machine is busy with other work; going on", "otherCores", round3(c), "waited", s.o.QuietWait)
			return c
		}
	}
}

// run offers the streams to setup t and collects the figures: once, or
// again (at most Options.NoisyRetries times) when the rest of the machine
// took more than Options.MaxOthers cores meanwhile. The quietest attempt
// is kept.
func (s *Suite) run(ctx context.Context, scenario, point string, multiple float64, t *target, keepAlive bool, repeat int, streams ...stream) (*RunResult, error) {
	return s.retryNoisy(ctx, t, point, func() (*RunResult, error) {
		return s.runOnce(ctx, scenario, point, multiple, t, keepAlive, repeat, streams...)
	})
}

// retryNoisy runs once, again when the rest of the machine was noisy
// meanwhile, as run does, and keeps the quietest attempt.
func (s *Suite) retryNoisy(ctx context.Context, t *target, point string, once func() (*RunResult, error)) (*RunResult, error) {
	var all []*RunResult
	for attempt := 1; ; attempt++ {
		s.waitQuiet(ctx)
		r, err := once()
		if err != nil {
			return nil, err
		}
		r.Noisy = s.o.MaxOthers >= 0 && r.OtherCores() > s.o.MaxOthers
		all = append(all, r)
		if !r.Noisy || attempt > s.o.NoisyRetries || s.o.NoisyRetries < 0 {
			break
		}
		s.log.Warn("noisy run: the rest of the machine took CPU; running it again", "setup", t.name, "point", point, "otherCores", round3(r.OtherCores()))
	}
	return quietest(all), nil
}

// quietest returns the attempt during which the rest of the machine used
// the least CPU, with the others kept in its Discarded.
func quietest(attempts []*RunResult) *RunResult {
	best := attempts[0]
	for _, r := range attempts[1:] {
		if r.OtherCores() < best.OtherCores() {
			best = r
		}
	}
	for _, r := range attempts {
		if r != best {
			best.Discarded = append(best.Discarded, r)
		}
	}
	best.Attempts = len(attempts)
	return best
}

// runOnce offers the streams to setup t and collects the figures.
func (s *Suite) runOnce(ctx context.Context, scenario, point string, multiple float64, t *target, keepAlive bool, repeat int, streams ...stream) (*RunResult, error) {
	if err := s.settle(ctx, t); err != nil {
		return nil, err
	}
	before, err := t.pool.Stats(ctx)
	if err != nil {
		return nil, err
	}
	res := &RunResult{Scenario: scenario, Setup: t.name, Point: point, Multiple: multiple, KeepAlive: keepAlive,
		Repeat: repeat, Capacity: t.cap10, LoadAvg: demo.LoadAverage()}
	cpu0 := readCPU(t)
	reports, err := offer(ctx, t, keepAlive, repeat, streams)
	res.CPU.RenderersLoad = (t.pool.CPUTime() - cpu0.pool).Seconds()
	res.CPU.LoadWall = time.Since(cpu0.wall).Seconds()
	if err != nil {
		return nil, err
	}
	after, statsKnown, err := s.drainAfter(ctx, t, before, res)
	if err != nil {
		return nil, err
	}
	res.setCPU(t, cpu0)
	res.setFigures(reports, before, after, statsKnown)
	if res.DrainCapped {
		res.Note = fmt.Sprintf("still rendering %v after the load; restarted", s.o.DrainBound)
		if !statsKnown {
			res.Note += "; its render count could not be read (-1)"
		}
		if err := s.restart(ctx, t.pool); err != nil {
			return nil, err
		}
	}
	tot := reports[0].Total
	s.log.Info("run", "scenario", scenario, "setup", t.name, "point", point, "keepalive", keepAlive, "repeat", repeat,
		"offered", round1(tot.OfferedRate), "goodput", round1(tot.Goodput), "delivered", round1(tot.Delivered), "success", round3(tot.SuccessRatio),
		"p99", tot.Latency.P99.Round(time.Millisecond), "wasted", res.Wasted, "drain", res.Drain.Round(100*time.Millisecond),
		"errors", tot.Errors)
	return res, nil
}

// settle waits for t's renderers to be idle before a run, restarting them
// if they are still busy after Options.DrainBound.
func (s *Suite) settle(ctx context.Context, t *target) error {
	if _, _, err := t.pool.WaitIdle(ctx, 100*time.Millisecond, s.o.DrainBound); err != nil {
		s.log.Warn("renderers busy before a run; restarting them", "setup", t.name, "err", err)
		return s.restart(ctx, t.pool)
	}
	return nil
}

// offer runs the streams against t at once, each its own open-loop
// generator, and returns their reports.
func offer(ctx context.Context, t *target, keepAlive bool, repeat int, streams []stream) ([]*loadgen.Report, error) {
	reports := make([]*loadgen.Report, len(streams))
	errs := make([]error, len(streams))
	var wg sync.WaitGroup
	for i, st := range streams {
		cfg := loadgen.Config{
			URL:               t.url + st.query,
			Phases:            st.phases,
			Timeout:           time.Second,
			DisableKeepAlives: !keepAlive,
			LoopbackOnly:      true,
			// 8x of capacity with a 1 s timeout keeps about 8 capacities'
			// worth of requests in flight; leave room for twice that.
			MaxOutstanding: 16384,
			Seed:           uint64(repeat*100 + i + 1),
		}
		if st.tweak != nil {
			st.tweak(&cfg)
		}
		wg.Go(func() { reports[i], errs[i] = loadgen.Run(ctx, cfg) })
	}
	wg.Wait()
	return reports, errors.Join(errs...)
}

// drainAfter waits after a run for t's renderers to finish what the run
// left them, recording the wait in res, and returns their stats then.
// Past Options.DrainBound it marks res.DrainCapped and reads the stats as
// it can: statsKnown is false when no count after the run could be read.
func (s *Suite) drainAfter(ctx context.Context, t *target, before demo.Stats, res *RunResult) (after demo.Stats, statsKnown bool, err error) {
	after, res.Drain, err = t.pool.WaitIdle(ctx, 100*time.Millisecond, s.o.DrainBound)
	if err == nil {
		return after, true, nil
	}
	if ctx.Err() != nil {
		return after, false, err
	}
	res.DrainCapped = true
	// A renderer with a thousand renders to share its one core with
	// answers its stats path late: give it time.
	sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	st, serr := t.pool.Stats(sctx)
	cancel()
	switch {
	case serr == nil:
		return st, true, nil
	case after.Rendered > before.Rendered:
		// The last count read while waiting: a lower bound still.
		return after, true, nil
	}
	return after, false, nil
}

// cpuMark is the CPU time each party had used at one instant.
type cpuMark struct {
	generator, front, pool, machine time.Duration
	wall                            time.Time
}

func readCPU(t *target) cpuMark {
	return cpuMark{SelfCPUTime(), t.front.CPUTime(), t.pool.CPUTime(), MachineCPUTime(), time.Now()}
}

// setCPU records the CPU each party used since from: the generator (this
// process), the front, the renderers and the rest of the machine.
func (r *RunResult) setCPU(t *target, from cpuMark) {
	r.CPU.Generator = (SelfCPUTime() - from.generator).Seconds()
	r.CPU.Front = (t.front.CPUTime() - from.front).Seconds()
	r.CPU.Renderers = (t.pool.CPUTime() - from.pool).Seconds()
	if isLib(t.name) {
		// The library-face process is both front and renderer.
		r.CPU.Front = 0
	}
	r.CPU.Wall = time.Since(from.wall).Seconds()
	r.CPU.Others = max(0, (MachineCPUTime()-from.machine).Seconds()-r.CPU.Generator-r.CPU.Front-r.CPU.Renderers)
}

// setFigures records the streams' reports and what the renderers did
// meanwhile: renders, the wasted ones, the peak in flight; -1 each when
// their count after the run is not known.
func (r *RunResult) setFigures(reports []*loadgen.Report, before, after demo.Stats, statsKnown bool) {
	r.Reports = reports
	var series [][]loadgen.Point
	for _, rep := range reports {
		series = append(series, rep.Series)
		r.Successes += rep.Total.Successes
	}
	if len(series) > 1 {
		// One stream's series is in its report already.
		r.Series = MergeSeries(series...)
	}
	if !statsKnown {
		r.Rendered, r.Wasted, r.PeakInflight = -1, -1, -1
		return
	}
	r.Rendered = after.Rendered - before.Rendered
	r.Wasted = Wasted(r.Rendered, r.Successes)
	r.PeakInflight = after.PeakInflight
}

// restart restarts a pool whose renders would not end, then sends a
// request through every front so that none keeps a dead connection.
func (s *Suite) restart(ctx context.Context, p *Pool) error {
	if err := p.Restart(ctx); err != nil {
		return err
	}
	c := newClient(5 * time.Second)
	for _, t := range s.targets {
		if t.pool == p {
			for range 4 {
				get(ctx, c, t.url+"?cpu=0", io.Discard)
			}
		}
	}
	return nil
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }
func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

// setups returns the suite's targets in table order; with fronts, only
// those in front of the workers (not the library face).
func (s *Suite) setups(fronts bool) []*target {
	var ts []*target
	for _, n := range KnownSetups() {
		if t := s.targets[n]; t != nil && (!fronts || !isLib(n)) {
			ts = append(ts, t)
		}
	}
	return ts
}

// ListenLoopback is net.Listen("tcp", addr) for a loopback addr only: the
// suite's servers are never reachable from elsewhere.
func ListenLoopback(addr string) (net.Listener, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("eval: %s is not a loopback address", addr)
	}
	return net.Listen("tcp", addr)
}
