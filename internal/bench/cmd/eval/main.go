// Command eval runs sluice's overload evaluation suite: it starts demo
// workers, sluice, a round-robin proxy, nginx -> HAProxy and the
// library-face servers on 127.0.0.1, offers them the same open-loop load
// scenario by scenario, and writes JSON, SVG and Markdown results. See
// internal/bench/README.md.
//
//	go run ./internal/bench/cmd/eval -out docs/bench            # every scenario
//	go run ./internal/bench/cmd/eval -scenarios goodput,hop     # some
//	go run ./internal/bench/cmd/eval -scenarios node-react,node-async -phase 5s   # the Node.js workers, ~15 min
//	go run ./internal/bench/cmd/eval -scenarios hop-cpu                # the front's CPU per request beside nginx -> HAProxy, ~12 min
//
// It also serves as two of the setups, started by the suite itself:
//
//	eval rr-proxy -listen 127.0.0.1:P -upstreams 127.0.0.1:A,127.0.0.1:B
//	eval lib-server -listen 127.0.0.1:P -units U [-admission [-algorithm aimd|gradient|fixed]]
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

	"github.com/sluicehq/sluice/internal/bench"
	"github.com/sluicehq/sluice/internal/config"
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
		}
	}
	return suite(ctx, args, stderr)
}

func suite(ctx context.Context, args []string, stderr io.Writer) int {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "docs/bench", "directory for the results (JSON, SVG, Markdown)")
	work := fs.String("work", "", "directory for configs and process logs (default: a new temporary directory)")
	scenarios := fs.String("scenarios", strings.Join(bench.Scenarios(), ","), "comma-separated scenarios to run")
	setups := fs.String("setups", "", "comma-separated setups (default: all of "+strings.Join(bench.AllSetups(), ",")+"; the diagnostic sluice-no-codel only when named)")
	sluiceBin := fs.String("sluice", "", "sluice binary (default: go build ./cmd/sluice into the work directory)")
	nginxBin := fs.String("nginx", "/usr/sbin/nginx", "nginx binary; empty skips the nginx -> HAProxy setups")
	haproxyBin := fs.String("haproxy", "/usr/sbin/haproxy", "haproxy binary; empty skips the nginx -> HAProxy setups")
	phase := fs.Duration("phase", 10*time.Second, "length of a constant-load phase")
	units := fs.Float64("units", 0, "demo work calibration in units per ms (default: calibrate now)")
	keepAlive := fs.String("keepalive", "on,off", "client keep-alive modes to run: on, off or on,off")
	repeats := fs.Int("repeats", 3, "runs of the repeated point (4x, keep-alive off)")
	drain := fs.Duration("drain-bound", 30*time.Second, "longest wait for the workers to finish after a run before restarting them")
	capTime := fs.Duration("capacity-time", 5*time.Second, "length of one capacity measurement")
	maxOthers := fs.Float64("max-others", 0.25, "cores the rest of the machine may use during a run before it is run again; negative: no check")
	noisyRetries := fs.Int("noisy-retries", 1, "how many times a noisy run is run again (-1: never)")
	quietWait := fs.Duration("quiet-wait", 30*time.Second, "longest wait before a run for the rest of the machine to be quiet")
	nodeBin := fs.String("node", "node", "node binary of the Node.js scenarios ("+bench.ScenarioNodeReact+", "+bench.ScenarioNodeAsync+")")
	nodeWorker := fs.String("node-worker", bench.DefaultNodeWorker, "the Node.js scenarios' worker script (its npm ci done)")
	nodeReactItems := fs.Int("node-react-items", bench.NodeReactItems, "listing cards of "+bench.ScenarioNodeReact+"'s page; 200 or -1: the example's whole page")
	nodeSetups := fs.String("node-setups", strings.Join(bench.NodeSetupFamilies(), ","), "comma-separated setup families of the Node.js scenarios")
	hopRate := fs.Float64("hop-rate", bench.HopCPURate, "scenario "+bench.ScenarioHopCPU+": the fixed offered rate, requests per second")
	hopBaseline := fs.String("hop-baseline", "", "scenario "+bench.ScenarioHopCPU+": a second sluice binary measured beside -sluice (setup "+bench.HopBaseline+"), for a before/after in one run")
	rewrite := fs.Bool("rewrite", false, "measure nothing: rewrite the tables and charts in -out from its JSON files")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *rewrite {
		if err := bench.Rewrite(*out); err != nil {
			fmt.Fprintln(stderr, "eval:", err)
			return 1
		}
		return 0
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))
	var kas []bool
	for _, k := range strings.Split(*keepAlive, ",") {
		switch strings.TrimSpace(k) {
		case "on":
			kas = append(kas, true)
		case "off":
			kas = append(kas, false)
		default:
			fmt.Fprintf(stderr, "eval: -keepalive %q: want on, off or on,off\n", *keepAlive)
			return 2
		}
	}
	var families []string
	for _, f := range strings.Split(*nodeSetups, ",") {
		f = strings.TrimSpace(f)
		if !slices.Contains(bench.NodeSetupFamilies(), f) {
			fmt.Fprintf(stderr, "eval: -node-setups: unknown family %q (want some of %s)\n", f, strings.Join(bench.NodeSetupFamilies(), ","))
			return 2
		}
		families = append(families, f)
	}
	// The demo workers, their calibration and setups only when a scenario
	// needs them.
	noDemo := true
	for _, sc := range strings.Split(*scenarios, ",") {
		sc = strings.TrimSpace(sc)
		if !slices.Contains(bench.Scenarios(), sc) {
			fmt.Fprintf(stderr, "eval: -scenarios: unknown scenario %q (want some of %s)\n", sc, strings.Join(bench.Scenarios(), ","))
			return 2
		}
		noDemo = noDemo && (bench.IsNodeScenario(sc) || sc == bench.ScenarioHopCPU)
	}
	if *work == "" {
		d, err := os.MkdirTemp("", "sluice-eval-")
		if err != nil {
			fmt.Fprintln(stderr, "eval:", err)
			return 1
		}
		*work = d
	}
	log.Info("work directory (configs, logs)", "dir", *work)
	if *sluiceBin == "" {
		*sluiceBin = filepath.Join(*work, "bin", "sluice")
		build := exec.CommandContext(ctx, "go", "build", "-o", *sluiceBin, "./cmd/sluice")
		build.Stdout, build.Stderr = stderr, stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(stderr, "eval: building sluice (run from the repository root, or pass -sluice):", err)
			return 1
		}
	}
	o := bench.Options{
		SluiceBin:      *sluiceBin,
		NginxBin:       *nginxBin,
		HAProxyBin:     *haproxyBin,
		OutDir:         *out,
		WorkDir:        *work,
		UnitsPerMs:     *units,
		Phase:          *phase,
		KeepAlive:      kas,
		Repeats:        *repeats,
		DrainBound:     *drain,
		CapacityTime:   *capTime,
		MaxOthers:      *maxOthers,
		NoisyRetries:   *noisyRetries,
		QuietWait:      *quietWait,
		Logger:         log,
		NoDemo:         noDemo,
		NodeBin:        *nodeBin,
		NodeWorker:     *nodeWorker,
		NodeSetups:     families,
		NodeReactItems: *nodeReactItems,
		HopBaseline:    *hopBaseline,
		HopRate:        *hopRate,
	}
	if *setups != "" {
		o.Setups = strings.Split(*setups, ",")
	}
	start := time.Now()
	s, err := bench.NewSuite(ctx, o)
	if err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	defer s.Close()
	if rev, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		commit := strings.TrimSpace(string(rev))
		// The binaries are built from the working tree: say when it is not
		// the commit (tracked files modified).
		if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(st) > 0 {
			commit += " with uncommitted changes"
		}
		if err := s.SetCommit(commit); err != nil {
			fmt.Fprintln(stderr, "eval:", err)
			return 1
		}
	}
	for _, sc := range strings.Split(*scenarios, ",") {
		t0 := time.Now()
		if err := s.Run(ctx, strings.TrimSpace(sc)); err != nil {
			fmt.Fprintf(stderr, "eval: scenario %s: %v\n", sc, err)
			return 1
		}
		log.Info("scenario done", "scenario", sc, "took", time.Since(t0).Round(time.Second))
	}
	log.Info("suite done", "took", time.Since(start).Round(time.Second), "results", *out)
	return 0
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
	rr, err := bench.NewRoundRobin(strings.Split(*upstreams, ","))
	if err != nil {
		fmt.Fprintln(stderr, "eval rr-proxy:", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.HandleFunc(bench.RoundRobinReadyPath, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ready\n") })
	mux.Handle("/", rr)
	return serve(ctx, *listen, mux, stderr)
}

func serve(ctx context.Context, addr string, h http.Handler, stderr io.Writer) int {
	ln, err := bench.ListenLoopback(addr)
	if err != nil {
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 65 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		fmt.Fprintln(stderr, "eval:", err)
		return 1
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
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
	if _, err := bench.LibConfig(*algorithm, *initialLimit); err != nil {
		fmt.Fprintln(stderr, "eval lib-server:", err)
		return 2
	}
	ln, err := bench.ListenLoopback(*listen)
	if err != nil {
		fmt.Fprintln(stderr, "eval lib-server:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if err := bench.ServeLib(ctx, ln, *units, *withAdmission, *algorithm, *initialLimit, log); err != nil {
		fmt.Fprintln(stderr, "eval lib-server:", err)
		return 1
	}
	return 0
}
