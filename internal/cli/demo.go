package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/oklog/run"

	"github.com/sluicehq/sluice/internal/app"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/loadgen"
	"github.com/sluicehq/sluice/internal/supervisor"
)

const demoUsage = `usage: sluice demo [flags]

Starts sluice in front of single-threaded demo workers (sluice itself,
re-executed as CPU-bound renderers: one render at a time each, like Node.js
SSR processes), then offers an open-loop load ramp at multiples of their
capacity, twice: through sluice, and to the same workers through a plain
round-robin proxy with no admission control, one after the other at each
step, so that what else runs on the machine weighs on both alike. Before
each step, and after the last, it measures the capacity again, in short
closed-loop windows:
a step at or below capacity is set against the rate the workers sustained
in three windows of four, one past it against their median. It
prints, per step, the capacity, and per system goodput (answers within the
client's timeout per second), success ratio, latency of successes and what
was shed, and says so when the machine was busy: the figures are then
those of a shared machine, and vary from run to run. It also says when,
at or below capacity, the workers fell behind the load during a step
(their capacity fell, or the server without admission queued past the
250 ms at which sluice sheds a standing queue): sluice's sheds there
are a backlog's, not its threshold's; and when, past capacity, the
workers sustained less after a step than the capacity it was set against.
A step during which the workers' capacity fell by a tenth or more (other
processes took their CPU), or past capacity one in which their renders
took a tenth longer than their work in sluice's turn alone and its
goodput fell a tenth short of the capacity, compared the two systems on
a machine that changed under it: it is run again, once, and the demo
says so.

flags:
`

type demoFlags struct {
	workers   int
	cpu       time.Duration
	step      time.Duration
	loads     []float64
	timeout   time.Duration
	keepAlive bool
	verbose   bool
}

func parseDemoFlags(args []string, stderr io.Writer) (*demoFlags, error) {
	f := &demoFlags{}
	fs := flag.NewFlagSet("sluice demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&f.workers, "workers", runtime.GOMAXPROCS(0), "worker processes") // honours a cgroup CPU quota
	fs.DurationVar(&f.cpu, "cpu", 10*time.Millisecond, "CPU work per render")
	fs.DurationVar(&f.step, "step", 3*time.Second, "duration of each load step")
	loads := fs.String("loads", "0.5,1,2,4", "offered load steps, as multiples of measured capacity")
	fs.DurationVar(&f.timeout, "timeout", time.Second, "client timeout (the caller's patience)")
	fs.BoolVar(&f.keepAlive, "keepalive", true, "clients reuse connections (false: a new connection per request)")
	fs.BoolVar(&f.verbose, "v", false, "log sluice's and the workers' events")
	fs.Usage = func() { fmt.Fprint(fs.Output(), demoUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	switch {
	case fs.NArg() > 0:
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	case f.workers < 1:
		return nil, fmt.Errorf("-workers %d: want at least 1", f.workers)
	case f.cpu <= 0 || f.cpu > demo.MaxCPU:
		return nil, fmt.Errorf("-cpu %v: want more than 0 and at most %v", f.cpu, demo.MaxCPU)
	case f.step < time.Second:
		return nil, fmt.Errorf("-step %v: want at least 1s", f.step)
	case f.timeout <= 0:
		return nil, fmt.Errorf("-timeout %v: want more than 0", f.timeout)
	}
	for _, s := range strings.Split(*loads, ",") {
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || x <= 0 || x > 100 {
			return nil, fmt.Errorf("-loads %q: want comma-separated multiples in (0, 100]", *loads)
		}
		f.loads = append(f.loads, x)
	}
	return f, nil
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	f, err := parseDemoFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		return 2
	}
	if err := demoRun(ctx, f, stdout, stderr); err != nil {
		fmt.Fprintln(stderr, "sluice demo:", err)
		return 1
	}
	return 0
}

// demoRun starts sluice in front of the demo workers and runs the
// measurement; both are actors of one run group, so that sluice stops
// whichever ends first (the measurement, normally). It cuts rather than
// drains: nobody else is served, and the workers are killed at once with
// whatever backlog the baseline's last run left them, which they would
// otherwise render for seconds before they stopped.
func demoRun(ctx context.Context, f *demoFlags, stdout, stderr io.Writer) error {
	logOut := io.Discard
	if f.verbose {
		logOut = stderr
	}
	a, err := newDemoApp(f, logOut)
	if err != nil {
		return err
	}
	var g run.Group
	drain, stop := context.WithCancel(context.Background())
	g.Add(func() error {
		if err := a.Run(drain); err != nil {
			return err
		}
		return errors.New("sluice stopped before the measurement ended")
	}, func(error) { stop(); a.Cut() })
	measure, cancel := context.WithCancel(ctx)
	g.Add(func() error { return demoMeasure(measure, a, f, stdout, stderr) }, func(error) { cancel() })
	return g.Run()
}

// newDemoApp assembles sluice in front of f.workers demo workers (this
// binary, re-executed), on a listener of its own on 127.0.0.1:0.
func newDemoApp(f *demoFlags, logOut io.Writer) (*app.App, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	work := demo.Calibrate(200 * time.Millisecond)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	cfg := config.Default()
	cfg.Server.Listen = ln.Addr().String()
	cfg.Server.DrainDelay = 0
	cfg.Server.ShutdownTimeout = 10 * time.Second
	cfg.Admin.Listen = config.AdminOff
	wc, err := config.Parse("demo", []byte("workers: {command: [placeholder], readyPath: "+demo.ReadyPath+"}\n"))
	if err != nil {
		ln.Close()
		return nil, err
	}
	cfg.Workers = wc.Workers
	cfg.Workers.Command = []string{self, "demo-worker"}
	cfg.Workers.Count = config.Count(f.workers)
	cfg.Workers.Env = map[string]string{demo.EnvUnits: strconv.FormatFloat(work.UnitsPerMilli(), 'f', -1, 64)}
	cfg.Workers.StopTimeout = 5 * time.Second
	a, err := app.New(app.Options{Config: cfg, Logger: slog.New(slog.NewTextHandler(logOut, nil)), WorkerOutput: logOut, Listener: ln})
	if err != nil {
		ln.Close()
	}
	return a, err
}

// Capacity is measured in closed-loop windows: more clients than workers,
// so that sluice's queue keeps every worker busy, and the renders that end
// in each window counted. Many short windows, so that one slowed by
// another process weighs as one of many.
const (
	capacityWindow   = 250 * time.Millisecond
	capacityWarmup   = 500 * time.Millisecond // the workers' limits and the connections settle in it; not counted
	firstWindows     = 8                      // before the first step
	stepWindows      = 4                      // before each later one
	windowsKept      = 12                     // the estimate's memory: about the last three steps
	clientsPerWorker = 4
)

// demoMeasure waits for sluice's workers, then runs the load ramp through
// sluice and through a round-robin proxy to the same workers, measuring
// their capacity before each step, and prints the table.
func demoMeasure(ctx context.Context, a *app.App, f *demoFlags, stdout, stderr io.Writer) error {
	fmt.Fprintf(stdout, "sluice demo: %d single-threaded workers, %v of CPU per render, client timeout %v, keep-alive %v\n",
		f.workers, f.cpu, f.timeout, f.keepAlive)
	listen := a.Config().Server.Listen
	query := "/?cpu=" + strconv.FormatFloat(float64(f.cpu)/float64(time.Millisecond), 'f', -1, 64)
	if err := waitReady(ctx, "http://"+listen+a.Config().Server.ReadyPath, 30*time.Second); err != nil {
		return err
	}
	// The baseline is given the workers ready now: all of them.
	if err := waitWorkers(ctx, a.Supervisor(), f.workers, 30*time.Second); err != nil {
		return err
	}
	if note := busyNote(demo.LoadAverage(), runtime.NumCPU()); note != "" {
		fmt.Fprintln(stdout, note)
	}
	url := "http://" + listen + query
	clients := clientsPerWorker * f.workers
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: clients}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr}
	windows := func(n int, d time.Duration) ([]float64, error) { return closedLoop(ctx, c, url, clients, n, d) }
	// The warm-up's rate is not counted: the workers' limits and the
	// connections settle in it.
	if _, err := windows(1, capacityWarmup); err != nil {
		return err
	}
	baseline, stop, err := serveBaseline(a.Supervisor())
	if err != nil {
		return err
	}
	defer stop()
	r := &demoRamp{
		sup: a.Supervisor(), f: f, windows: windows, capacity: newCapacityWindows(windowsKept),
		names: []string{"sluice", "no admission"},
		urls:  []string{url, baseline + query},
	}
	steps, err := r.run(ctx, stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "capacity, measured before each step in windows of %v (%d clients in a closed loop through sluice): "+
		"of the last %d windows, at or below 1x the rate the workers sustained in three of four, past 1x their median; "+
		"after: the median of the windows measured after the step\n",
		capacityWindow, clients, windowsKept)
	if note := noisyNote(r.capacity.span()); note != "" {
		fmt.Fprintln(stdout, note)
	}
	fmt.Fprintln(stdout)
	if err := demoTable(stdout, steps, r.names); err != nil {
		return err
	}
	for _, s := range steps {
		for _, note := range []string{rerunNote(s, f.cpu), fellNote(s), behindNote(s), slowNote(s, f.cpu)} {
			if note != "" {
				fmt.Fprintln(stdout, note)
			}
		}
	}
	return nil
}

// demoStep is one step of the ramp: the load offered, the capacity it was
// set against, and what each system made of it.
type demoStep struct {
	multiple float64 // of the capacity
	phase    loadgen.Phase
	capacity float64
	// after is the median of the windows measured after the step (before
	// the next, or after the last): a step that met less capacity than it
	// was set against shows it.
	after float64
	stats []loadgen.Stats // by system, as demoRamp.names
	work  []turnWork      // by system: what the workers did in its turn
	// rerun is, for a step run again, its first run: the workers'
	// capacity fell during it (fellNote), or other processes took their
	// CPU in sluice's turn alone (slowNote).
	rerun *demoStep
}

// turnWork is what the workers did during one system's turn at a step,
// from their own counters (demo.Stats).
type turnWork struct {
	known    bool          // every worker's counters were read before and after
	busy     time.Duration // rendering, summed over the workers
	rendered int64
	span     time.Duration // the turn, start to end
	workers  int
}

// share returns the share of the turn the workers spent rendering, or -1
// when it is not known.
func (w turnWork) share() float64 {
	if !w.known || w.span <= 0 || w.workers == 0 {
		return -1
	}
	return float64(w.busy) / (float64(w.span) * float64(w.workers))
}

// perRender returns the mean time a render took, 0 when none was counted.
func (w turnWork) perRender() time.Duration {
	if !w.known || w.rendered <= 0 {
		return 0
	}
	return w.busy / time.Duration(w.rendered)
}

// demoRamp offers the load steps to each system in turn.
type demoRamp struct {
	sup      *supervisor.Supervisor
	f        *demoFlags
	windows  func(n int, d time.Duration) ([]float64, error) // n closed-loop windows' rates
	capacity *capacityWindows
	names    []string // systems: sluice first, then the baseline
	urls     []string
	// idle waits for the workers to finish what the last run left queued
	// in them, and turns runs a step through every system, into st; nil
	// means waitIdle on sup and runTurns (tests replace them).
	idle  func(ctx context.Context) error
	turns func(ctx context.Context, st *demoStep) error
}

// run measures the capacity before each step and offers the step's
// multiple of it to every system, one after the other, so that a change in
// what else the machine runs falls on every system alike. It waits before
// each measurement and each run for the workers to finish what the last
// run left queued in them (renders whose clients gave up), which would
// slow the next.
//
// The windows measured after a step are those before the next; when no
// render ended in most of them, they met a stall and are measured again,
// once (a CI run's neighbours took a worker's CPU for a second). When they
// show that the workers' capacity fell during the step (fellNote), the
// step compared the systems on a machine that changed under it: it is run
// again, once, set against the capacity those windows measured (not the
// estimate over the windows kept, most of them from before the fall).
// When they show it held but the workers' renders were slowed in sluice's
// turn (slowNote), the machine changed under that turn alone: the step is
// run again, once, set against the capacity estimated as before.
func (r *demoRamp) run(ctx context.Context, stderr io.Writer) ([]demoStep, error) {
	if r.idle == nil {
		r.idle = func(ctx context.Context) error { return waitIdle(ctx, r.sup, 30*time.Second) }
	}
	if r.turns == nil {
		r.turns = r.runTurns
	}
	fmt.Fprintf(stderr, "running %d steps of %v, each through %s, capacity measured before each...\n",
		len(r.f.loads), r.f.step, strings.Join(r.names, " and "))
	measure := func(n int) ([]float64, error) {
		if err := r.idle(ctx); err != nil {
			return nil, err
		}
		rates, err := r.windows(n, capacityWindow)
		if err != nil {
			return nil, err
		}
		for _, rate := range rates {
			r.capacity.add(rate)
		}
		return rates, nil
	}
	if _, err := measure(firstWindows); err != nil {
		return nil, err
	}
	var steps []demoStep
	for _, m := range r.f.loads {
		var st demoStep
		var first *demoStep // the step's first run, when it was run again
		var since []float64 // the windows measured after it
		for run := range 2 {
			capacity := r.capacity.estimate(capacityQuantile(m))
			if since != nil {
				capacity = quantile(since, capacityQuantile(m))
			}
			st = demoStep{multiple: m, capacity: capacity, rerun: first,
				stats: make([]loadgen.Stats, len(r.urls)), work: make([]turnWork, len(r.urls))}
			if st.capacity <= 0 {
				return nil, fmt.Errorf("capacity measurement: too few renders ended within the last %d windows of %v to say", windowsKept, capacityWindow)
			}
			st.phase = loadgen.Phase{Name: fmt.Sprintf("%gx", m), Rate: m * st.capacity, Duration: r.f.step}
			if err := r.turns(ctx, &st); err != nil {
				return nil, err
			}
			rates, err := measure(stepWindows)
			if err != nil {
				return nil, err
			}
			if quantile(rates, 0.5) <= 0 {
				// No render ended in most windows, though the workers
				// were idle when they began: a stall (other processes
				// took the workers' CPU), which says nothing of their
				// capacity. Measured again, once.
				if rates, err = measure(stepWindows); err != nil {
					return nil, err
				}
			}
			st.after = quantile(rates, 0.5)
			fell, slowed := fellNote(st) != "", slowNote(st, r.f.cpu) != ""
			if run > 0 || !fell && !slowed {
				break
			}
			if fell {
				since = rates
				fmt.Fprintf(stderr, "the workers' capacity fell during the %s step: running it again\n", st.phase.Name)
			} else {
				fmt.Fprintf(stderr, "other processes took the workers' CPU during sluice's turn at the %s step: running it again\n", st.phase.Name)
			}
			f := st
			first = &f
		}
		steps = append(steps, st)
	}
	return steps, nil
}

// runTurns runs st's phase through every system, in stepOrder, into st.
func (r *demoRamp) runTurns(ctx context.Context, st *demoStep) error {
	for _, j := range stepOrder(st.multiple, len(r.urls)) {
		if err := r.idle(ctx); err != nil {
			return err
		}
		// The turn runs from the workers' counters read before it to
		// those read after: a worker left a backlog answers the second
		// read late, and its busy time runs on until then.
		start := time.Now()
		before, nBefore, errBefore := workerTotals(r.sup)
		rep, err := loadgen.Run(ctx, loadgen.Config{
			URL: r.urls[j], Phases: []loadgen.Phase{st.phase}, Timeout: r.f.timeout, DisableKeepAlives: !r.f.keepAlive,
			LoopbackOnly: true, Seed: 1,
		})
		if err != nil {
			return err
		}
		after, nAfter, errAfter := workerTotals(r.sup)
		span := time.Since(start)
		st.stats[j] = rep.Phases[0].Stats
		st.work[j] = turnWork{
			known: errBefore == nil && errAfter == nil && nBefore == nAfter && after.BusyNs >= before.BusyNs,
			busy:  time.Duration(after.BusyNs - before.BusyNs), rendered: after.Rendered - before.Rendered,
			span: span, workers: nAfter,
		}
	}
	return nil
}

// stepOrder returns the order in which the systems (sluice first, then
// the baselines) run a step of multiple m. Past capacity the baseline
// leaves its workers a backlog of renders its clients gave up on, seconds
// of it at 4x: it runs last, and its backlog is waited out before the next
// step (or dropped with the workers after the last), never before sluice's
// run of the same step. At or below capacity it leaves next to nothing and
// runs first, so that sluice's run is the one further from the capacity
// measurement.
func stepOrder(m float64, systems int) []int {
	order := make([]int, systems)
	for i := range order {
		order[i] = i
	}
	if m <= 1 {
		slices.Reverse(order)
	}
	return order
}

// rerunNote says that a step was run again, and why: the workers'
// capacity fell during its first run (see fellNote), or their renders were
// slowed in sluice's turn (see slowNote; cpu is a render's work); "" for a
// step run once.
func rerunNote(s demoStep, cpu time.Duration) string {
	f := s.rerun
	if f == nil {
		return ""
	}
	if fellNote(*f) == "" {
		w := f.work[0]
		return fmt.Sprintf("note: at %s sluice's turn in the step's first run served %.0f/s of the %.0f/s capacity, its workers rendering %.0f%% of it and each render taking %v against its %v of work: other processes took their CPU during that turn, and the step was run again",
			s.phase.Name, f.stats[0].Goodput, f.capacity, 100*w.share(), w.perRender().Round(100*time.Microsecond), cpu)
	}
	against := f.phase.Rate
	if f.multiple > 1 {
		against = f.capacity
	}
	return fmt.Sprintf("note: at %s the workers sustained %.0f/s after the step's first run, a tenth or more under the %.0f/s it was set against: their capacity fell during it, and the step was run again, set against the capacity measured since (%.0f/s)",
		s.phase.Name, f.after, against, s.capacity)
}

// fellNote says when the workers sustained a tenth less after a step than
// it needed of them (the measurement's own spread is about that): their
// capacity fell during the step. At or below capacity, a tenth less than
// it offered: the step was then an overload for every system, and its
// sheds are no measure of what sluice does at capacity. Past it, a tenth
// less than the capacity it was set against: the goodput that column
// measures was served by slower workers. "" otherwise.
func fellNote(s demoStep) string {
	if s.after <= 0 {
		return ""
	}
	if s.multiple > 1 {
		if s.after >= 0.9*s.capacity {
			return ""
		}
		return fmt.Sprintf("note: at %s the workers sustained %.0f/s after the step, a tenth or more under the %.0f/s capacity it was set against: their capacity fell during it, and its goodput was served with less",
			s.phase.Name, s.after, s.capacity)
	}
	if s.after >= 0.9*s.phase.Rate {
		return ""
	}
	return fmt.Sprintf("note: at %s the workers sustained %.0f/s after the step, a tenth or more under the %.0f/s it offered: their capacity fell during it, and the step was an overload for both systems",
		s.phase.Name, s.after, s.phase.Rate)
}

// slowNote says, of a step past capacity in which sluice's goodput fell a
// tenth or more under the capacity measured before it (and the one
// measured after did not: fellNote says that), when the workers were
// rendering nine tenths of sluice's turn or more and each render took a
// tenth or more longer than its work (cpu, on an idle core): other
// processes took the workers' CPU during that turn alone, and sluice
// served what the slower renders allowed. A shortfall with the workers
// idle gets no note: the busy column shows it. "" otherwise.
func slowNote(s demoStep, cpu time.Duration) string {
	if s.multiple <= 1 || len(s.stats) == 0 || len(s.work) == 0 || fellNote(s) != "" {
		return ""
	}
	w := s.work[0]
	if s.stats[0].Goodput >= 0.9*s.capacity || w.share() < 0.9 || w.perRender() < cpu+cpu/10 {
		return ""
	}
	return fmt.Sprintf("note: at %s sluice kept the workers rendering %.0f%% of its turn, each render taking %v against its %v of work: other processes took their CPU during the turn, and its goodput was served with less than the %.0f/s capacity",
		s.phase.Name, 100*w.share(), w.perRender().Round(100*time.Microsecond), cpu, s.capacity)
}

// demoCalmWait is the wait past which sluice's queue, at or below
// capacity, is judged standing and shed (admission's calm sojourn).
const demoCalmWait = 250 * time.Millisecond

// behindNote says, of a step at or below capacity in which sluice shed
// and the capacity measured after it did not fall (fellNote says that),
// when the server without admission kept a queue standing past sluice's
// calm wait: its p99 shows the workers fell behind the offered rate for
// part of the step, a stall the windows before and after did not see, and
// sluice shed the backlog where the other queued it. "" otherwise.
func behindNote(s demoStep) string {
	if s.multiple > 1 || len(s.stats) < 2 || fellNote(s) != "" {
		return ""
	}
	sl, base := s.stats[0], s.stats[1]
	if sl.Requests == 0 || sl.SuccessRatio >= 1 || base.Successes == 0 || base.Latency.P99 <= demoCalmWait {
		return ""
	}
	return fmt.Sprintf("note: at %s the server without admission answered its slowest 1%% after %v: the workers fell behind the %.0f/s offered for part of the step, and sluice shed what waited past %v, where the other kept it queued",
		s.phase.Name, base.Latency.P99.Round(time.Millisecond), s.phase.Rate, demoCalmWait)
}

// busyNote warns, when the load average is above the CPUs, that other
// processes share them with the workers: the figures will vary from run
// to run. load < 0 (unknown) says nothing.
func busyNote(load float64, cpus int) string {
	if load < 0 || load <= float64(cpus) {
		return ""
	}
	return fmt.Sprintf("note: this machine is busy (load average %.1f on %d CPUs): other processes take CPU from the workers at times, and the figures below vary from run to run", load, cpus)
}

// noisyNote says when the capacity windows of the run, lo to hi renders/s,
// moved by more than a third: other processes took the workers' CPU at
// times, and any step may have met less capacity than it was offered
// against.
func noisyNote(lo, hi float64) string {
	if hi <= 0 || lo >= hi*2/3 {
		return ""
	}
	return fmt.Sprintf("note: the workers' capacity moved between %.0f and %.0f renders/s during the run: other processes took CPU from them at times, and a step may have met less than its column says", lo, hi)
}

// serveBaseline serves, on 127.0.0.1:0, the same workers with no
// admission control, no queue and no idle-slot dispatch: a plain
// round-robin proxy, as Node's cluster module would. It returns its
// address as http://host:port, and stop, which closes it and waits.
func serveBaseline(sup *supervisor.Supervisor) (url string, stop func(), err error) {
	var addrs []string
	for _, w := range sup.Stats().Workers {
		if w.State == supervisor.StateReady && w.Network == "tcp" {
			addrs = append(addrs, w.Addr)
		}
	}
	rr, err := demo.NewRoundRobin(addrs)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: rr, ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	return "http://" + ln.Addr().String(), func() { srv.Close(); <-done }, nil
}

func demoTable(w io.Writer, steps []demoStep, names []string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "offered\tcapacity\tafter\tsystem\tgoodput\tof capacity\tworkers busy\tsuccess\tp50\tp99\tfailures\t")
	for _, s := range steps {
		after := "-"
		if s.after > 0 {
			after = fmt.Sprintf("%.0f/s", s.after)
		}
		for j, name := range names {
			st := s.stats[j]
			busy := "-"
			if j < len(s.work) && s.work[j].share() >= 0 {
				busy = fmt.Sprintf("%.0f%%", 100*s.work[j].share())
			}
			fmt.Fprintf(tw, "%.0f/s (%s)\t%.0f/s\t%s\t%s\t%.0f/s\t%.0f%%\t%s\t%.1f%%\t%s\t%s\t%s\t\n", s.phase.Rate, s.phase.Name, s.capacity, after, name,
				st.Goodput, 100*st.Goodput/s.capacity, busy, 100*st.SuccessRatio,
				fmtLatency(st.Latency.P50, st.Successes), fmtLatency(st.Latency.P99, st.Successes), fmtErrors(st.Errors))
		}
	}
	return tw.Flush()
}

func fmtLatency(d time.Duration, n int64) string {
	if n == 0 {
		return "-"
	}
	return d.Round(100 * time.Microsecond).String()
}

func fmtErrors(m map[string]int64) string {
	if len(m) == 0 {
		return "-"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] })
	var parts []string
	for _, k := range keys[:min(3, len(keys))] {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// waitReady polls url until it answers 200: a starting process has no
// other way to tell.
func waitReady(ctx context.Context, url string, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v", url, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// waitWorkers waits until n workers are ready.
func waitWorkers(ctx context.Context, sup *supervisor.Supervisor, n int, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ready := 0
		for _, w := range sup.Stats().Workers {
			if w.State == supervisor.StateReady {
				ready++
			}
		}
		if ready >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d workers ready after %v", ready, n, within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// workerTotals returns the demo workers' counters summed, read from each
// ready one, and how many were read; an error when one could not be.
func workerTotals(sup *supervisor.Supervisor) (demo.Stats, int, error) {
	var sum demo.Stats
	n := 0
	for _, w := range sup.Stats().Workers {
		if w.State != supervisor.StateReady || w.Network != "tcp" || w.Addr == "" {
			continue
		}
		st, err := workerStats(w.Addr)
		if err != nil {
			return sum, n, err
		}
		sum.Rendered += st.Rendered
		sum.BusyNs += st.BusyNs
		n++
	}
	return sum, n, nil
}

// workerStats reads a demo worker's counters from its address.
func workerStats(addr string) (demo.Stats, error) {
	var st demo.Stats
	resp, err := http.Get("http://" + addr + demo.StatsPath)
	if err != nil {
		return st, err
	}
	defer resp.Body.Close()
	if err := jsonDecode(resp.Body, &st); err != nil {
		return st, fmt.Errorf("worker %s stats: %w", addr, err)
	}
	return st, nil
}

// waitIdle waits until no worker has a render in flight.
func waitIdle(ctx context.Context, sup *supervisor.Supervisor, within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		busy := 0
		for _, w := range sup.Stats().Workers {
			if w.Network != "tcp" || w.Addr == "" {
				continue
			}
			if st, err := workerStats(w.Addr); err == nil && st.Inflight > 0 {
				busy++
			}
		}
		if busy == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("workers still busy after %v", within)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// runDemoWorker is the hidden `demo-worker` command: sluice re-executed as
// a single-threaded demo renderer (see internal/demo). `sluice demo` starts
// it; it is also handy as a worker in your own configs and benchmarks.
func runDemoWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: sluice demo-worker (configured by PORT or SLUICE_SOCKET, and SLUICE_DEMO_UNITS_PER_MS)")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return 2
	}
	if err := demo.RunWorker(ctx, os.Getenv); err != nil {
		fmt.Fprintln(stderr, "sluice demo-worker:", err)
		return 1
	}
	return 0
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }
