package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/wire"
	"github.com/sluicehq/sluice/limit"
	"github.com/sluicehq/sluice/server"
)

func numCPU() int { return runtime.GOMAXPROCS(0) } // honours a cgroup CPU quota

const serveUsage = `usage: sluice serve [-c sluice.yaml] [-log text|json] [-- worker command...]

Runs the front server. With workers (the config's workers section, or a
command after --) sluice starts and supervises them and dispatches each
request to an idle one; with upstreams it fronts servers it does not start;
with neither it serves the embedded demo app (?cpu=<ms>, ?sleep=<ms>) behind
the admission controller, as a Go service using the library would.

A command after -- is the workers' command: it fills a workers section
that names none, or adds one with its defaults. A file that names a command
too is an error. Keys of the file that have no effect (sluice validate
lists them) are logged as warnings at start.

The first SIGTERM or SIGINT drains (readiness 503, drainDelay, stop
accepting, in-flight requests finish, workers stop); a second cuts at once
(requests in flight are cut, workers are killed).
SIGHUP reloads the config file, as nginx does: an invalid file changes
nothing (each error is logged with its file:line); a valid one is applied
where it can be while serving (keys that need a restart are logged and
keep their running value), then the workers are restarted one at a time.
POST /config/reload on the admin listener reloads without the restart
unless the workers' command, env or dir changed.

flags:
`

// runServe is `sluice serve`. It owns its signals (see serveSignals).
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "config file (default ./"+config.DefaultFile+" when present, else built-in defaults)")
	logFormat := fs.String("log", "text", "log format: text or json")
	fs.Usage = func() { fmt.Fprint(fs.Output(), serveUsage); fs.PrintDefaults() }
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	log, err := newLogger(stderr, *logFormat)
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
		return 2
	}
	loaded, err := config.ResolveWith(*cfgPath, config.Overrides{Command: fs.Args()})
	if err != nil {
		printConfigErrors(stderr, err)
		return 1
	}
	logWarnings(log, loaded.Warnings)
	// Under -log json the workers' lines are records too (msg, worker,
	// stream): one format for the log pipeline to read.
	var workerOut io.Writer = stderr
	if *logFormat == "json" {
		workerOut = nil
	}
	s, err := newService(loaded.Config, loaded.Source, log, workerOut, nil)
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
		return 1
	}
	s.enableReload(*cfgPath, config.Overrides{Command: fs.Args()})
	drainCtx, stopSignals := server.Signals(context.WithoutCancel(ctx), s.cut)
	defer stopSignals()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return s.run(drainCtx, hup)
}

func newLogger(w io.Writer, format string) (*slog.Logger, error) {
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, nil)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, nil)), nil
	}
	return nil, fmt.Errorf("-log %q: want text or json", format)
}

func printConfigErrors(w io.Writer, err error) {
	if list := config.List(err); len(list) > 0 {
		for _, e := range list {
			fmt.Fprintln(w, e)
		}
		return
	}
	fmt.Fprintln(w, err)
}

// logWarnings logs the config's warnings: keys that have no effect, and
// values that disable a safety.
func logWarnings(log *slog.Logger, warnings []*config.Error) {
	for _, w := range warnings {
		at := w.File
		if w.Line > 0 {
			at = fmt.Sprintf("%s:%d", w.File, w.Line)
		}
		msg := "config: a key has no effect"
		if w.Unsafe() {
			msg = "config: a value disables a safety"
		}
		log.Warn(msg, "at", at, "key", w.Path, "why", w.Msg)
	}
}

// backends is what the supervisor and the static upstreams have in common:
// they tell the proxy which endpoints take traffic.
type backends interface {
	Run(ctx context.Context) error
	Shutdown(ctx context.Context) error
	Ready() bool
}

// service is one `sluice serve`: the components and their lifetimes.
type service struct {
	cfg  *config.Config
	log  *slog.Logger
	ctrl *admission.Controller
	srv  *server.Server
	sup  *supervisor.Supervisor // nil without workers
	up   *supervisor.Static     // nil without upstreams
	pool backends               // sup or up; nil in library mode
	px   *proxy.Proxy           // nil in library mode
	sat  *limit.Runtime         // nil in front mode
	adm  *adminServer           // nil when the admin listener is off
	live live                   // what a reload changes while serving
	rl   *reloader              // nil when reload is not enabled

	// cutCtx is done at the second signal: the drain is cut and the
	// workers are killed without waiting out their stop timeout.
	cutCtx context.Context
	cutAll context.CancelFunc
}

// cut is the second SIGTERM or SIGINT: the operator wants the process gone
// now, so requests in flight are cut and the workers killed at once.
func (s *service) cut() {
	s.cutAll()
	s.srv.Cut()
}

// newService builds the components. also, when set, is told of every
// worker the supervisor adds or removes, beside the proxy (sluice demo
// uses it to reach the same workers without admission control).
func newService(cfg *config.Config, source string, log *slog.Logger, workerOut io.Writer, also supervisor.Balancer) (*service, error) {
	base := ""
	if source != "" {
		base = filepath.Dir(source)
	}
	s := &service{cfg: cfg, log: log}
	s.cutCtx, s.cutAll = context.WithCancel(context.Background())
	var sig limit.Signal
	if !wire.FrontMode(cfg) {
		rt, err := limit.NewRuntime(limit.RuntimeOptions{Logger: log})
		if err != nil {
			return nil, err
		}
		s.sat, sig = rt, rt
	}
	copts, err := wire.ControllerOptions(cfg, sig, log)
	if err != nil {
		return nil, err
	}
	s.live.controllerOptions(cfg, &copts)
	if s.ctrl, err = admission.New(copts); err != nil {
		return nil, err
	}
	cls, err := classifier(cfg)
	if err != nil {
		return nil, err
	}
	s.live.cls.Store(cls)
	fbs, err := newRouteFallbacks(cfg, cls, base)
	if err != nil {
		return nil, err
	}
	s.live.fbs.Store(fbs)
	var handler http.Handler
	ready := func() bool { return true }
	switch {
	case wire.FrontMode(cfg):
		popts, err := proxyOptions(cfg, s.ctrl, cls, base, log)
		if err != nil {
			return nil, err
		}
		s.live.proxyOptions(&popts)
		if cfg.Workers != nil {
			// A hung worker is taken out of rotation by the proxy and
			// killed here (s.sup is set below, before any request); its
			// slot restarts like any crashed worker's.
			popts.OnHung = func(id int) { s.sup.Kill(id, "hung: silent past its timeout and hang grace") }
		}
		if s.px, err = proxy.New(popts); err != nil {
			return nil, err
		}
		handler = s.px
		var bal supervisor.Balancer = s.px
		if also != nil {
			bal = teeBalancer{s.px, also}
		}
		if cfg.Workers != nil {
			so := supervisorOptions(cfg.Workers, base, workerOut, log)
			if so.Guard, err = os.Executable(); err != nil {
				log.Warn("workers run without a guard: what a worker starts (an sh -c or npm start worker's server) outlives sluice if it is killed with SIGKILL", "err", err)
			}
			if s.sup, err = supervisor.New(bal, so); err != nil {
				return nil, err
			}
			s.live.workers = s.sup
			s.pool = s.sup
		} else {
			if s.up, err = supervisor.NewStatic(bal, staticOptions(cfg.Upstreams, log)); err != nil {
				return nil, err
			}
			s.pool = s.up
		}
		ready = func() bool { return s.pool.Ready() && s.px.Ready() }
	default:
		handler = s.demoHandler()
	}
	// Compression and the access log, around the proxy, change on reload.
	if handler, err = s.live.front(cfg, handler, log); err != nil {
		return nil, err
	}
	sc := cfg.Server
	certs, err := s.live.tlsCerts(cfg, base, log)
	if err != nil {
		return nil, err
	}
	s.srv = &server.Server{
		Addr:             sc.Listen,
		Handler:          handler,
		H2C:              sc.H2C,
		KeepAliveTimeout: orNone(sc.KeepAliveTimeout),
		HeadersTimeout:   orNone(sc.HeadersTimeout),
		RequestTimeout:   orNone(sc.RequestTimeout),
		ShutdownTimeout:  sc.ShutdownTimeout,
		DrainDelay:       orNone(sc.DrainDelay),
		MaxHeaderBytes:   int(sc.MaxHeaderBytes),
		MaxConnections:   int(orNone(time.Duration(sc.MaxConnections))),
		SendTimeout:      orNone(sc.SendTimeout),
		HealthPath:       sc.HealthPath,
		ReadyPath:        sc.ReadyPath,
		Ready:            ready,
		Logger:           log,
		// Queued requests keep their chance during the drain; those still
		// waiting when it is cut are shed with reason shutdown.
		OnCut: s.ctrl.Close,
	}
	if certs != nil {
		// The pair is read again when its files change, and on reload.
		s.srv.TLSConfig = certs.TLSConfig()
	}
	if cfg.Admin.Enabled() {
		s.adm = newAdminServer(s)
	}
	return s, nil
}

// orNone maps the file's 0 ("no limit") onto the components' negative.
func orNone(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// demoHandler is library mode: the embedded demo app behind the admission
// middleware, as a Go service would wrap its own handler.
func (s *service) demoHandler() http.Handler {
	app := &demo.App{Work: demo.Calibrate(50 * time.Millisecond), Name: "sluice (embedded demo app)"}
	mux := http.NewServeMux()
	if p := s.cfg.Proxy.PingPath; p != "" {
		mux.HandleFunc(p, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "pong\n") })
	}
	mux.Handle("/", (&admission.Middleware{Controller: s.ctrl, Classify: s.live.classify, Observe: observeAdmission}).Wrap(app))
	return mux
}

// observeAdmission notes in the request's Info how it left the queue: what
// the proxy notes in front mode.
func observeAdmission(r *http.Request, _ time.Time, wait time.Duration, err error) {
	if info := reqinfo.From(r.Context()); info != nil {
		info.QueueWait = wait
		if reason, ok := admission.ShedReason(err); ok {
			info.Shed = reason.String()
		}
	}
}

// run serves until drainCtx is done, drains (or is cut), then stops the
// workers and the rest, and returns the exit code: 0 for a complete drain.
// Each value on restart is a SIGHUP: a reload of the config and a rolling
// restart of the workers.
func (s *service) run(drainCtx context.Context, restart <-chan os.Signal) int {
	bg, stopBG := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() {
		stopBG()
		wg.Wait()
		s.cutAll() // releases cutCtx
	}()
	if s.sat != nil {
		wg.Go(func() { s.sat.Run(bg, 100*time.Millisecond) })
	}
	if s.adm != nil {
		if err := s.adm.start(); err != nil {
			s.log.Error("admin listener", "err", err)
			return 1
		}
		defer s.adm.stop()
	}
	poolDone := make(chan error, 1)
	if s.pool != nil {
		go func() { poolDone <- s.pool.Run(bg) }()
	}
	wg.Go(func() {
		for {
			select {
			case <-bg.Done():
				return
			case <-restart:
				s.hup(bg)
			}
		}
	})
	err := s.srv.Run(drainCtx)
	if s.px != nil {
		// Upgraded connections (WebSockets) do not hold up the drain;
		// they end with it, before the workers stop.
		s.px.CloseUpgrades()
	}
	code := 0
	switch {
	case errors.Is(err, server.ErrCut):
		s.log.Error("drain cut short: requests were still running at shutdownTimeout", "err", err)
		code = 1
	case err != nil:
		s.log.Error("server", "err", err)
		code = 1
	}
	s.ctrl.Close()
	if s.pool != nil {
		// Every request has finished or been cut: the workers hold nothing
		// more. They get StopTimeout each to exit, unless a second signal
		// asks for the end now.
		stopIn := 5 * time.Second
		if s.cfg.Workers != nil {
			stopIn = s.cfg.Workers.StopTimeout + time.Second
		}
		ctx, cancel := context.WithTimeout(s.cutCtx, stopIn)
		if err := s.pool.Shutdown(ctx); err != nil {
			s.log.Error("stopping workers", "err", err)
			code = 1
		}
		cancel()
		stopBG()
		<-poolDone
	}
	if code == 0 {
		s.log.Info("drained; exiting")
	}
	return code
}

func (s *service) rollingRestart(ctx context.Context) {
	s.log.Info("rolling restart requested")
	if err := s.sup.RollingRestart(ctx); err != nil {
		s.log.Error("rolling restart", "err", err)
		return
	}
	s.log.Info("rolling restart done")
}

// teeBalancer tells two balancers of every worker change.
type teeBalancer [2]supervisor.Balancer

func (t teeBalancer) Add(e supervisor.Endpoint) { t[0].Add(e); t[1].Add(e) }
func (t teeBalancer) Remove(id int)             { t[0].Remove(id); t[1].Remove(id) }
func (t teeBalancer) Drain(ctx context.Context, id int) error {
	err := t[1].Drain(ctx, id)
	return errors.Join(t[0].Drain(ctx, id), err)
}
