package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// Reload, as nginx does it. SIGHUP, or POST /config/reload on the admin
// listener, reads the configuration file again (the same -c file, the same
// command after --) and validates it whole:
//
//   - An invalid file changes nothing: every error is logged with its
//     file:line, as `sluice validate` prints them, and sluice goes on with
//     the configuration it runs.
//   - A valid one is applied where it can be while requests are served
//     (the keys tagged reload:"live" or "roll" in internal/config: routes,
//     trust, tenants, compression, the access log, a fixed limit, the TLS
//     files, the workers' command, environment and directory). A key that
//     needs a restart (listen addresses, timeouts, the queue, ...) is
//     logged as a warning naming it, at every reload while the file
//     differs from what runs, and its running value is kept.
//   - The workers are rolled, one slot at a time, when their command,
//     environment or directory changed. SIGHUP rolls them in any case, as
//     nginx replaces its workers on every reload: a deploy of the workers'
//     code sends it, with the same file and command; POST
//     /config/reload rolls them only for such a change, and POST
//     /workers/restart rolls them alone.
//
// A reload hands the workers' new command, environment and directory to
// the supervisor (Supervisor.SetCommand): a worker started after it, by
// the rolling restart or after a crash, runs what the file says now.

// reloader is what a reload needs beyond the App: where the file is and
// what the command line added, the configuration the process started with
// (what restart-only keys are compared with) and the one last applied
// (what live keys are compared with).
type reloader struct {
	path      string
	overrides config.Overrides

	mu    sync.Mutex // one reload at a time
	start *config.Config
	last  *config.Config
}

// Key classes for a reload.
type keyClass int

const (
	keyRestart keyClass = iota // needs a restart: the running value is kept
	keyLive                    // applied while requests are served
	keyRoll                    // applied to the workers started from now, and the workers are rolled
)

// classOf says how a reload to next treats the key at path: as its reload
// tag says (config.KeyOf), when what the process started with has set up
// what it changes (TLS, the workers, a fixed limit). A route added or
// removed is live, as its keys are.
func (l *live) classOf(path string, start, next *config.Config) keyClass {
	k, ok := config.KeyOf(path)
	switch {
	case !ok || k.Reload == config.Restart:
		return keyRestart
	case k.Reload == config.Roll:
		if l.workers == nil || start.Workers == nil || next.Workers == nil {
			return keyRestart
		}
		return keyRoll
	case strings.HasPrefix(k.Path, "server.tls."):
		if l.certs == nil || !next.Server.TLS.Enabled() {
			return keyRestart // TLS switched on or off
		}
	case k.Path == "server.maxConcurrentRequests" || strings.HasPrefix(k.Path, "server.backpressure."):
		if l.liveLimit(start, next) < 0 {
			return keyRestart
		}
	}
	return keyLive
}

// liveLimit returns the fixed limit next gives the Controller when the
// running one is fixed too, and of the same kind (front mode; library mode
// with backpressure and its algorithm as they were); else -1: a change of
// algorithm needs a restart.
func (l *live) liveLimit(start, next *config.Config) int {
	a, b := start.Server.Backpressure, next.Server.Backpressure
	if l.fixed == nil || start.FrontMode() != next.FrontMode() ||
		!start.FrontMode() && (a.Enabled != b.Enabled || a.Algorithm != b.Algorithm) {
		return -1
	}
	return fixedLimit(next)
}

// fixedLimit returns the fixed limit cfg gives the Controller, or -1 when
// its algorithm is another.
func fixedLimit(cfg *config.Config) int {
	o, err := ControllerOptions(cfg, nil, nil)
	if err != nil {
		return -1
	}
	f, ok := o.Limit.(*limit.Fixed)
	if !ok {
		return -1
	}
	return f.Limit()
}

// reloadReport is what a reload did.
type reloadReport struct {
	Source  string   // the file read; "" for the built-in defaults
	Applied []string // live keys changed since the last reload
	Restart []string // keys that differ from what runs and need a restart
	Roll    bool     // the workers' command, environment or directory changed
}

// errNoReload is returned by reload when Options.Reload was not set
// (sluice demo).
var errNoReload = errors.New("reload: not enabled")

// reload reads the configuration again and applies it (see the top of this
// file). On an invalid file it logs every problem, changes nothing and
// returns the error (config.List finds each problem in it).
func (a *App) reload() (*reloadReport, error) { return a.reloadThen(false) }

// reloadThen is reload; roll says the caller rolls the workers whatever
// changed (SIGHUP), so that the log says what will happen.
func (a *App) reloadThen(roll bool) (*reloadReport, error) {
	rl := a.rl
	if rl == nil {
		return nil, errNoReload
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	loaded, err := config.ResolveWith(rl.path, rl.overrides)
	if err != nil {
		a.logReloadErrors(err)
		return nil, err
	}
	LogWarnings(a.log, loaded.Warnings)
	next := loaded.Config
	rep := a.live.plan(rl.start, rl.last, next)
	rep.Source = loaded.Source
	if err := a.apply(rl.start, next, loaded.Source, rep); err != nil {
		a.log.Error("config reload: not applied; the running configuration is kept", "err", err)
		return nil, err
	}
	rl.last = next
	for _, p := range rep.Restart {
		a.log.Warn("config reload: a key needs a restart; its running value is kept", "key", p)
	}
	a.log.Info("config reloaded", "file", rep.Source, "applied", rep.Applied, "restartOnly", rep.Restart, "rollWorkers", rep.Roll || roll && a.Supervisor() != nil)
	return rep, nil
}

// plan sorts the keys next changes: restart-only ones against what the
// process started with (so they are reported at every reload until a
// restart), live ones against the last reload.
func (l *live) plan(start, last, next *config.Config) *reloadReport {
	rep := &reloadReport{}
	for _, p := range config.Diff(start, next) {
		if l.classOf(p, start, next) == keyRestart {
			rep.Restart = append(rep.Restart, p)
		}
	}
	for _, p := range config.Diff(last, next) {
		switch l.classOf(p, start, next) {
		case keyLive:
			rep.Applied = append(rep.Applied, p)
		case keyRoll:
			rep.Applied = append(rep.Applied, p)
			rep.Roll = true
		}
	}
	return rep
}

// logReloadErrors logs each problem of an invalid file at its file:line.
func (a *App) logReloadErrors(err error) {
	list := config.List(err)
	for _, e := range list {
		a.log.Error("config reload: invalid", "at", at(e), "key", e.Path, "why", e.Msg)
	}
	if len(list) == 0 {
		a.log.Error("config reload: invalid", "err", err)
	}
	a.log.Error("config reload failed; the running configuration is kept", "errors", max(len(list), 1))
}

// apply installs next's live keys. Everything that can fail comes first,
// so a failure changes nothing.
func (a *App) apply(start, next *config.Config, source string, rep *reloadReport) error {
	base := baseDir(source)
	l := &a.live
	cls, fbs, err := routes(next, base)
	if err != nil {
		return err
	}
	top, err := l.wrap(next, a.log)
	if err != nil {
		return err
	}
	var prev supervisor.Command
	if rep.Roll {
		if prev, err = l.workers.SetCommand(commandOf(supervisorOptions(next.Workers, base, nil, nil))); err != nil {
			return err
		}
	}
	if l.certs != nil {
		if err := a.reloadCerts(next, base); err != nil {
			if rep.Roll {
				l.workers.SetCommand(prev) // valid: it ran
			}
			return err
		}
	}
	if rep.Roll {
		l.prevCmd = prev
	}
	l.cls.Store(cls)
	l.fbs.Store(fbs)
	l.top.Store(&top)
	w := next.Tenants.Weights
	l.weights.Store(&w)
	if n := l.liveLimit(start, next); n > 0 {
		l.fixed.Set(n)
	}
	return nil
}

// reloadCerts switches to next's certificate files when they are others,
// and otherwise reads the files again if they changed.
func (a *App) reloadCerts(next *config.Config, base string) error {
	t := next.Server.TLS
	if !t.Enabled() {
		return nil // TLS off needs a restart: the pair in force is kept
	}
	cert, key := resolve(base, t.CertFile), resolve(base, t.KeyFile)
	if c, k := a.live.certs.Files(); c != cert || k != key {
		return a.live.certs.SetFiles(cert, key)
	}
	// A changed pair that does not load is logged and the previous one
	// kept: not a reason to refuse the rest of the file.
	a.live.certs.Reload()
	return nil
}

// hangup is SIGHUP: reload, then roll the workers, whether their command
// changed or not (see the top of this file). An invalid file stops there.
func (a *App) hangup(ctx context.Context) {
	rep, err := a.reloadThen(true)
	sup := a.Supervisor()
	if err != nil || sup == nil {
		return
	}
	a.rollWorkers(ctx, sup, rep.Roll)
}

// rollWorkers runs a rolling restart. With newSpec, it is the restart that
// takes a reloaded command to the workers: if a worker fails to start with
// it, the previous command is put back for the workers started from now
// on, and the next reload tries again.
func (a *App) rollWorkers(ctx context.Context, sup *supervisor.Supervisor, newSpec bool) {
	a.log.Info("rolling restart requested")
	a.tolerateRoll(rollTolerance)
	err := sup.RollingRestart(ctx)
	a.tolerateRoll(rollGrace)
	switch {
	case err == nil:
		return // the supervisor logged it done, with its workers and time
	case errors.Is(err, supervisor.ErrRestarting) && newSpec:
		a.log.Warn("rolling restart: one is already running; the slots it has not reached yet start with the reloaded command, the others keep the previous one until the next rolling restart")
		return
	}
	a.log.Error("rolling restart", "err", err)
	// Stopped (sluice is on its way out) is not the command's failure.
	if newSpec && !errors.Is(err, supervisor.ErrStopped) && ctx.Err() == nil {
		a.putBackCommand()
	}
}

// A rolling restart takes capacity away while it runs: each worker's
// successor starts cold beside it, taking its CPU, or in its place
// (workers.roll). The queue holds such a
// planned, passing dip rather than shed it (admission.Controller.Tolerate):
// requests wait up to rollQueueBound (or the queue timeout, if shorter),
// in order, from the restart's start until rollGrace after its end, while
// the last successor warms up. Half a second, not more: a request served
// after the longest wait must still render within a client's patience
// (a second is a common timeout), or the wait bought only a wasted render.
// rollTolerance bounds a restart that never ends.
const (
	rollQueueBound = 500 * time.Millisecond
	rollGrace      = 2 * time.Second
	rollTolerance  = time.Hour
)

// tolerateRoll makes the Controller queue through a rolling restart's dip
// for d from now, in place of any tolerance in force: the roll's end
// shortens its own hour to the grace. (A successor whose limit is still
// doubling extends it again through the proxy.)
func (a *App) tolerateRoll(d time.Duration) {
	if a.ctrl == nil {
		return
	}
	bound := rollQueueBound
	if qt := a.cfg.Server.Backpressure.QueueTimeout; qt > 0 {
		bound = min(bound, qt)
	}
	a.ctrl.ReplaceTolerance(time.Now().Add(d), bound)
}

// putBackCommand gives the supervisor back the workers' command from
// before the last reload, whose own failed to start, and makes the next
// reload find the file's command changed, to try it again.
func (a *App) putBackCommand() {
	a.rl.mu.Lock()
	defer a.rl.mu.Unlock()
	prev := a.live.prevCmd
	if _, err := a.live.workers.SetCommand(prev); err != nil {
		a.log.Error("rolling restart: putting the previous worker command back", "err", err)
		return
	}
	w := *a.rl.last.Workers
	w.Command, w.Env, w.Dir = prev.Args, envMap(prev.Env), prev.Dir
	last := *a.rl.last
	last.Workers = &w
	a.rl.last = &last
	a.log.Warn("rolling restart: the reloaded worker command failed to start; workers started from now on run the previous one")
}

// serveReload is POST /config/reload on the admin listener: 200 and what
// was applied, 422 and every error of an invalid file (file:line), 404
// when reload is not enabled. The workers are rolled, in the background,
// only when their command, environment or directory changed.
func (a *App) serveReload(w http.ResponseWriter, r *http.Request) {
	rep, err := a.reload()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	switch {
	case errors.Is(err, errNoReload):
		http.Error(w, "config reload is not enabled in this mode", http.StatusNotFound)
		return
	case err != nil:
		w.WriteHeader(http.StatusUnprocessableEntity)
		io.WriteString(w, "config reload failed; the running configuration is kept\n")
		list := config.List(err)
		for _, e := range list {
			fmt.Fprintln(w, e)
		}
		if len(list) == 0 {
			fmt.Fprintln(w, err)
		}
		return
	}
	source := rep.Source
	if source == "" {
		source = "the built-in defaults"
	}
	fmt.Fprintf(w, "config reloaded from %s\n", source)
	fmt.Fprintf(w, "applied: %s\n", listOr(rep.Applied))
	fmt.Fprintf(w, "need a restart (running values kept): %s\n", listOr(rep.Restart))
	if sup := a.Supervisor(); rep.Roll && sup != nil {
		// The restart outlives this request: the run group owns it.
		if a.tasks.Go(func(ctx context.Context) { a.rollWorkers(ctx, sup, true) }) {
			io.WriteString(w, "workers: rolling restart started\n")
		} else {
			io.WriteString(w, "workers: not rolled: sluice is stopping\n")
		}
	}
}

func listOr(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// commandOf is what workers configured as o run.
func commandOf(o supervisor.Options) supervisor.Command {
	env := slices.Clone(o.Env)
	slices.Sort(env) // built from a map: its order is random
	return supervisor.Command{Args: o.Command, Env: env, Dir: o.Dir}
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
