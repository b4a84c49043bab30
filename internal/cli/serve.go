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
	"runtime"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/app"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/server"
)

const serveUsage = `usage: sluice serve [-c sluice.yaml] [--listen host:port] [--admin host:port|off]
                    [--workers N|auto] [--concurrency N|auto] [-log text|json] [-- worker command...]

Runs the front server. With workers (the config's workers section, or a
command after --) sluice starts and supervises them and dispatches each
request to an idle one; with upstreams it fronts servers it does not start;
with neither it serves the embedded demo app (?cpu=<ms>, ?sleep=<ms>) behind
the admission controller, as a Go service using the library would.

A command after -- is the workers' command: it fills a workers section
that names none, or adds one with its defaults. A file that names a command
too is an error. Keys of the file that have no effect (sluice validate
lists them) are logged as warnings at start.

--listen, --admin, --workers and --concurrency set server.listen,
admin.listen, workers.count and workers.concurrency: a flag wins over the
file, at start and at every reload. sluice validate, given the same flags,
says which key each one overrides.

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

// runServe is `sluice serve`. It owns its signals: the first SIGTERM or
// SIGINT drains, the second cuts, each SIGHUP reloads.
func runServe(ctx context.Context, ext Extensions, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfgPath := fs.String("c", "", "config file (default ./"+config.DefaultFile+" when present, else built-in defaults)")
	logFormat := fs.String("log", "text", "log format: text or json")
	var flags config.Flags
	flags.Define(fs)
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
	overrides := config.Overrides{Command: fs.Args(), Flags: flags}
	loaded, err := config.ResolveWith(*cfgPath, overrides)
	if err != nil {
		printConfigErrors(stderr, err)
		return 1
	}
	app.LogWarnings(log, loaded.Warnings)
	for _, o := range loaded.Overridden {
		log.Info("flag", "flag", o.Flag, "value", o.Value, "key", o.Key, "fileLine", o.Line)
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	o := app.Options{
		Config: loaded.Config, Source: loaded.Source, Logger: log,
		WrapFront: ext.WrapFront, Library: embeddedDemo, Version: version,
		Reload: &app.Reload{Path: *cfgPath, Overrides: overrides}, Hangup: hup,
	}
	// Under -log json the workers' lines are records too (msg, worker,
	// stream): one format for the log pipeline to read.
	if *logFormat != "json" {
		o.WorkerOutput = stderr
	}
	a, err := app.New(o)
	if err != nil {
		fmt.Fprintln(stderr, "sluice serve:", err)
		return 1
	}
	setProcs(loaded.Config, log)
	drainCtx, stopSignals := server.Signals(context.WithoutCancel(ctx), a.Cut)
	defer stopSignals()
	if a.Run(drainCtx) != nil {
		return 1 // logged by Run
	}
	return 0
}

// setProcs applies app.Procs, after app.New has sized the worker pool on
// every usable CPU, unless the GOMAXPROCS environment variable chose
// already. It is the command's decision, not the assembly's: GOMAXPROCS
// is the process's, and `sluice demo` runs its load generator in the
// same process.
func setProcs(cfg *config.Config, log *slog.Logger) {
	if os.Getenv("GOMAXPROCS") != "" {
		return
	}
	cpus := runtime.GOMAXPROCS(0) // honours a cgroup CPU quota
	if p := app.Procs(cfg, cpus); p != cpus {
		runtime.GOMAXPROCS(p)
		log.Info("procs", "gomaxprocs", p, "cpus", cpus)
	}
}

// embeddedDemo is what serve runs in library mode: the demo app
// (?cpu=<ms>, ?sleep=<ms>) behind admission, as the evaluation suite's
// library-face server runs it.
func embeddedDemo(admit func(http.Handler) http.Handler) http.Handler {
	d := &demo.App{Work: demo.Calibrate(50 * time.Millisecond), Name: "sluice (embedded demo app)"}
	return demo.LibHandler(d, admit)
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
