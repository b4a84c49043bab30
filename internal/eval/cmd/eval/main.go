// Command eval runs sluice's overload evaluation suite: it starts demo
// workers, sluice, a round-robin proxy, nginx -> HAProxy and the
// library-face servers on 127.0.0.1, offers them the same open-loop load
// scenario by scenario, and writes JSON, SVG and Markdown results. See
// internal/eval/README.md.
//
//	go run ./internal/eval/cmd/eval -out docs/bench            # every scenario
//	go run ./internal/eval/cmd/eval -scenarios goodput,hop     # some
//	go run ./internal/eval/cmd/eval -scenarios node-react,node-async -phase 5s   # the Node.js workers, ~15 min
//	go run ./internal/eval/cmd/eval -scenarios hop-cpu                # the front's CPU per request beside nginx -> HAProxy, ~12 min
//	go run ./internal/eval/cmd/eval -scenarios hypernova -phase 5s    # the real Hypernova: its coordinator, nginx -> HAProxy, sluice
//
// It also serves as three of the setups, started by the suite itself:
//
//	eval rr-proxy -listen 127.0.0.1:P -upstreams 127.0.0.1:A,127.0.0.1:B
//	eval lib-server -listen 127.0.0.1:P -units U [-admission [-algorithm aimd|gradient|fixed]]
//	eval shed-server -listen 127.0.0.1:P    # hop-cpu's floor: 503 to everything
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/eval"
	"github.com/sluicehq/sluice/internal/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stderr))
}

func run(ctx context.Context, args []string, stderr io.Writer) int {
	if len(args) > 0 {
		switch args[0] {
		case "rr-proxy":
			return rrProxy(ctx, args[1:], stderr)
		case "lib-server":
			return libServer(ctx, args[1:], stderr)
		case "shed-server":
			return shedServer(ctx, args[1:], stderr)
		}
	}
	return suite(ctx, args, stderr)
}

// evalFlags are the suite's flags: most go straight into the suite's
// options, the lists are read from their text by parseLists.
type evalFlags struct {
	o            eval.Options
	scenarios    string
	setups       string
	keepAlive    string
	nodeSetups   string
	nodeReactMix string
	layout       string
	rewrite      bool
}

// newSuiteFlagSet returns the flag table of the suite, its values parsed
// into f.
func newSuiteFlagSet(stderr io.Writer) (*flag.FlagSet, *evalFlags) {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := &evalFlags{}
	o := &f.o
	fs.StringVar(&o.OutDir, "out", "docs/bench", "directory for the results (JSON, SVG, Markdown)")
	fs.StringVar(&o.WorkDir, "work", "", "directory for configs and process logs (default: a new temporary directory)")
	fs.StringVar(&f.scenarios, "scenarios", strings.Join(eval.Scenarios(), ","), "comma-separated scenarios to run")
	fs.StringVar(&f.setups, "setups", "", "comma-separated setups (default: all of "+strings.Join(eval.AllSetups(), ",")+"; the diagnostic sluice-no-codel only when named)")
	fs.StringVar(&o.SluiceBin, "sluice", "", "sluice binary (default: go build ./cmd/sluice into the work directory)")
	fs.StringVar(&o.NginxBin, "nginx", "/usr/sbin/nginx", "nginx binary; empty skips the nginx -> HAProxy setups")
	fs.StringVar(&o.HAProxyBin, "haproxy", "/usr/sbin/haproxy", "haproxy binary; empty skips the nginx -> HAProxy setups")
	fs.DurationVar(&o.Phase, "phase", 10*time.Second, "length of a constant-load phase")
	fs.Float64Var(&o.UnitsPerMs, "units", 0, "demo work calibration in units per ms (default: calibrate now)")
	fs.StringVar(&f.keepAlive, "keepalive", "on,off", "client keep-alive modes to run: on, off or on,off")
	fs.IntVar(&o.Repeats, "repeats", 3, "runs of the repeated point (4x, keep-alive off)")
	fs.DurationVar(&o.DrainBound, "drain-bound", 30*time.Second, "longest wait for the workers to finish after a run before restarting them")
	fs.DurationVar(&o.CapacityTime, "capacity-time", 5*time.Second, "length of one capacity measurement")
	fs.Float64Var(&o.MaxOthers, "max-others", 0.25, "cores the rest of the machine may use during a run before it is run again; negative: no check")
	fs.IntVar(&o.NoisyRetries, "noisy-retries", 1, "how many times a noisy run is run again (-1: never)")
	fs.DurationVar(&o.QuietWait, "quiet-wait", 30*time.Second, "longest wait before a run for the rest of the machine to be quiet")
	fs.StringVar(&o.NodeBin, "node", "node", "node binary of the Node.js scenarios ("+eval.ScenarioNodeReact+", "+eval.ScenarioNodeAsync+")")
	fs.StringVar(&o.NodeWorker, "node-worker", eval.DefaultNodeWorker, "the Node.js scenarios' worker script (its npm ci done)")
	fs.IntVar(&o.NodeReactItems, "node-react-items", eval.NodeReactItems, "listing cards of "+eval.ScenarioNodeReact+"'s page; 200 or -1: the example's whole page")
	fs.IntVar(&o.NodeReactRenders, "node-react-renders", 1, "times "+eval.ScenarioNodeReact+"'s page is rendered a request (1-50): a heavier render")
	fs.StringVar(&f.nodeReactMix, "node-react-mix", "", "query mix of "+eval.ScenarioNodeReact+"'s requests by weight, appended to its own: \"cards=10:80,cards=200:20\" (pages of mixed sizes; cards are the first of -node-react-items)")
	fs.StringVar(&f.nodeSetups, "node-setups", strings.Join(eval.NodeSetupFamilies(), ","), "comma-separated setup families of the Node.js scenarios")
	fs.StringVar(&o.HypernovaWorker, "hypernova-worker", eval.DefaultHypernovaWorker, "scenario "+eval.ScenarioHypernova+"'s worker script (its npm ci done)")
	fs.IntVar(&o.HypernovaItems, "hypernova-items", eval.HypernovaItems, "listing cards of "+eval.ScenarioHypernova+"'s page (about 3.4 KB each, up to 200)")
	fs.IntVar(&o.RestartRounds, "restart-rounds", 1, "rolling restarts of each front in "+eval.ScenarioHypernova+" (each beside a run without one); the table gives the median")
	fs.Float64Var(&o.HopRate, "hop-rate", eval.HopCPURate, "scenario "+eval.ScenarioHopCPU+": the fixed offered rate, requests per second")
	fs.StringVar(&o.HopBaseline, "hop-baseline", "", "scenarios "+eval.ScenarioHopCPU+" and node-*: a second sluice binary measured beside -sluice (setup "+eval.HopBaseline+"), for a before/after in one run")
	fs.StringVar(&f.layout, "layout", defaultLayout(), "where the workers run: "+eval.LayoutPinned+" (CPUs of their own, the upper half; the harness and the fronts on the rest; the default with 2 or more CPUs) or "+eval.LayoutShared+" (every process on every CPU, as in a pod)")
	fs.BoolVar(&f.rewrite, "rewrite", false, "measure nothing: rewrite the tables and charts in -out from its JSON files")
	return fs, f
}

func suite(ctx context.Context, args []string, stderr io.Writer) int {
	fs, f := newSuiteFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if f.rewrite {
		if err := eval.Rewrite(f.o.OutDir); err != nil {
			fmt.Fprintln(stderr, "eval:", err)
			return 1
		}
		return 0
	}
	if r := f.o.NodeReactRenders; r < 1 || r > 50 {
		fmt.Fprintf(stderr, "eval: -node-react-renders %d: want 1 to 50\n", r)
		return 2
	}
	if r := f.o.RestartRounds; r < 1 || r > 20 {
		fmt.Fprintf(stderr, "eval: -restart-rounds %d: want 1 to 20\n", r)
		return 2
	}
	if f.nodeReactMix != "" {
		mix, err := loadgen.ParseWeights(f.nodeReactMix, ':')
		if err != nil {
			fmt.Fprintf(stderr, "eval: -node-react-mix: %v\n", err)
			return 2
		}
		f.o.NodeReactMix = mix
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	f.o.Logger = log
	if err := f.parseLists(); err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 2
	}
	if err := f.pin(); err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	log.Info("layout", "layout", f.o.Layout.String())
	if err := prepare(ctx, &f.o, stderr); err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	start := time.Now()
	s, err := eval.NewSuite(ctx, f.o)
	if err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	defer s.Close()
	if err := setCommit(s); err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	for _, sc := range strings.Split(f.scenarios, ",") {
		t0 := time.Now()
		if err := s.Run(ctx, strings.TrimSpace(sc)); err != nil {
			fmt.Fprintf(stderr, "eval: scenario %s: %v\n", sc, err)
			return 1
		}
		log.Info("scenario done", "scenario", sc, "took", time.Since(t0).Round(time.Second))
	}
	log.Info("suite done", "took", time.Since(start).Round(time.Second), "results", f.o.OutDir)
	return 0
}

// parseLists reads the comma-separated flags into the options: the client
// modes, the Node.js setup families and the setups; and, from the
// scenarios, whether the demo workers are needed at all.
func (f *evalFlags) parseLists() error {
	for _, k := range strings.Split(f.keepAlive, ",") {
		switch strings.TrimSpace(k) {
		case "on":
			f.o.KeepAlive = append(f.o.KeepAlive, true)
		case "off":
			f.o.KeepAlive = append(f.o.KeepAlive, false)
		default:
			return fmt.Errorf("-keepalive %q: want on, off or on,off", f.keepAlive)
		}
	}
	for _, fam := range strings.Split(f.nodeSetups, ",") {
		fam = strings.TrimSpace(fam)
		if !slices.Contains(eval.NodeSetupFamilies(), fam) {
			return fmt.Errorf("-node-setups: unknown family %q (want some of %s)", fam, strings.Join(eval.NodeSetupFamilies(), ","))
		}
		f.o.NodeSetups = append(f.o.NodeSetups, fam)
	}
	// The demo workers, their calibration and setups only when a scenario
	// needs them.
	f.o.NoDemo = true
	for _, sc := range strings.Split(f.scenarios, ",") {
		sc = strings.TrimSpace(sc)
		if !slices.Contains(eval.Scenarios(), sc) {
			return fmt.Errorf("-scenarios: unknown scenario %q (want some of %s)", sc, strings.Join(eval.Scenarios(), ","))
		}
		f.o.NoDemo = f.o.NoDemo && (eval.IsNodeScenario(sc) || sc == eval.ScenarioHopCPU || sc == eval.ScenarioHypernova)
	}
	if f.setups != "" {
		f.o.Setups = strings.Split(f.setups, ",")
	}
	return nil
}

// defaultLayout is pinned where there are CPUs to set apart.
func defaultLayout() string {
	if cpus, err := eval.AllowedCPUs(); err == nil && len(cpus) >= 2 {
		return eval.LayoutPinned
	}
	return eval.LayoutShared
}

// pin reads -layout into the options and, pinned, restricts the harness
// (and so every front it starts) to the front's CPUs.
func (f *evalFlags) pin() error {
	switch f.layout {
	case eval.LayoutShared:
		return nil
	case eval.LayoutPinned:
	default:
		return fmt.Errorf("-layout %q: want %s or %s", f.layout, eval.LayoutPinned, eval.LayoutShared)
	}
	cpus, err := eval.AllowedCPUs()
	if err != nil {
		return err
	}
	l := eval.SplitCPUs(cpus)
	if !l.Pinned() {
		return fmt.Errorf("-layout %s: this process may run on %d CPU, nothing to set apart (use -layout %s)", eval.LayoutPinned, len(cpus), eval.LayoutShared)
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return fmt.Errorf("-layout %s needs taskset (util-linux): %w", eval.LayoutPinned, err)
	}
	f.o.Layout = l
	return eval.PinProcess(l.Front)
}

// prepare makes the work directory when none was given, and builds sluice
// into it when no binary was.
func prepare(ctx context.Context, o *eval.Options, stderr io.Writer) error {
	if o.WorkDir == "" {
		d, err := os.MkdirTemp("", "sluice-eval-")
		if err != nil {
			return err
		}
		o.WorkDir = d
	}
	o.Logger.Info("work directory (configs, logs)", "dir", o.WorkDir)
	if o.SluiceBin == "" {
		o.SluiceBin = filepath.Join(o.WorkDir, "bin", "sluice")
		build := exec.CommandContext(ctx, "go", "build", "-o", o.SluiceBin, "./cmd/sluice")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building sluice (run from the repository root, or pass -sluice): %w", err)
		}
	}
	return nil
}

// setCommit records the commit the results were measured at, when git can
// tell it.
func setCommit(s *eval.Suite) error {
	rev, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return nil
	}
	commit := strings.TrimSpace(string(rev))
	// The binaries are built from the working tree: say when it is not
	// the commit (tracked files modified).
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
		commit += " with uncommitted changes"
	}
	return s.SetCommit(commit)
}

// rrProxy is the round-robin setup: a reverse proxy without admission.
func rrProxy(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval rr-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "127.0.0.1:port to listen on")
	upstreams := fs.String("upstreams", "", "comma-separated host:port of the workers")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	rr, err := demo.NewRoundRobin(strings.Split(*upstreams, ","))
	if err != nil {
		fmt.Fprintln(stderr, "eval rr-proxy:", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.HandleFunc(eval.RoundRobinReadyPath, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ready\n") })
	mux.Handle("/", rr)
	return serve(ctx, *listen, mux, stderr)
}

// shedServer is scenario hop-cpu's Go floor: a bare net/http server that
// answers 503 to everything (eval.ShedFloor).
func shedServer(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval shed-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "127.0.0.1:port to listen on")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	return serve(ctx, *listen, eval.ShedFloor(), stderr)
}

func serve(ctx context.Context, addr string, h http.Handler, stderr io.Writer) int {
	ln, err := eval.ListenLoopback(addr)
	if err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 65 * time.Second}
	if err := demo.ServeUntil(ctx, srv, ln, 5*time.Second); err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	return 0
}

// libServer is the library face: the demo app in-process, plain or behind
// the admission middleware with sluice's defaults, the backpressure
// algorithm aside.
func libServer(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval lib-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "127.0.0.1:port to listen on")
	units := fs.Float64("units", 0, "demo work calibration, units per ms")
	withAdmission := fs.Bool("admission", false, "wrap the app in sluice's admission middleware")
	algorithm := fs.String("algorithm", config.Default().Server.Backpressure.Algorithm, "with -admission: server.backpressure.algorithm, aimd, gradient or fixed (everything else the defaults)")
	initialLimit := fs.Int("initial-limit", 0, "with -admission: server.backpressure.initialLimit (0: the default)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *units <= 0 {
		fmt.Fprintln(stderr, "eval lib-server: -units must be positive")
		return 2
	}
	algorithmSet := false
	fs.Visit(func(f *flag.Flag) { algorithmSet = algorithmSet || f.Name == "algorithm" || f.Name == "initial-limit" })
	if algorithmSet && !*withAdmission {
		fmt.Fprintln(stderr, "eval lib-server: -algorithm and -initial-limit need -admission")
		return 2
	}
	if _, err := eval.LibConfig(*algorithm, *initialLimit); err != nil {
		fmt.Fprintln(stderr, "eval lib-server:", err)
		return 2
	}
	ln, err := eval.ListenLoopback(*listen)
	if err != nil {
		fmt.Fprintln(stderr, "eval lib-server:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := eval.ServeLib(ctx, ln, *units, *withAdmission, *algorithm, *initialLimit, log); err != nil {
		fmt.Fprintln(stderr, "eval lib-server:", err)
		return 1
	}
	return 0
}
