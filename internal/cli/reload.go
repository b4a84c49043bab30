package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/wire"
	"github.com/sluicehq/sluice/limit"
	"github.com/sluicehq/sluice/server"
)

// Reload, as nginx does it. SIGHUP, or POST /config/reload on the admin
// listener, reads the configuration file again (the same -c file, the same
// command after --) and validates it whole:
//
//   - An invalid file changes nothing: every error is logged with its
//     file:line, as `sluice validate` prints them, and sluice goes on with
//     the configuration it runs.
//   - A valid one is applied where it can be while requests are served
//     (liveKeys: routes, trust, tenants, compression, the access log, a
//     fixed limit, the TLS files, the workers' command, environment and
//     directory). A key that needs a restart (listen addresses, timeouts,
//     the queue, ...) is logged as a warning naming it, at every reload
//     while the file differs from what runs, and its running value is kept.
//   - The workers are rolled, one slot at a time, when their command,
//     environment or directory changed. SIGHUP rolls them in any case, as
//     nginx replaces its workers on every reload and as sluice's SIGHUP
//     always did (a deploy of the workers' code sends it); POST
//     /config/reload rolls them only for such a change, and POST
//     /workers/restart rolls them alone.
//
// A reload hands the workers' new command, environment and directory to
// the supervisor (Supervisor.SetCommand): a worker started after it, by
// the rolling restart or after a crash, runs what the file says now.

// reloader is what a reload needs beyond the service: where the file is and
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

// enableReload lets SIGHUP and POST /config/reload read path again with o
// applied, as runServe loaded it.
func (s *service) enableReload(path string, o config.Overrides) {
	s.rl = &reloader{path: path, overrides: o, start: s.cfg, last: s.cfg}
}

// live is what a reload changes while requests are served; each part is
// read by the request path through an atomic pointer, so a request sees
// the old or the new value, never a mix within one part.
type live struct {
	cls     atomic.Pointer[admission.Classifier]
	fbs     atomic.Pointer[routeFallbacks]
	weights atomic.Pointer[map[string]float64]
	// fixed is the Controller's limit algorithm when it is a fixed limit
	// (front mode; library mode with a fixed algorithm or no backpressure):
	// the Controller adopts its value at its next sample window.
	fixed *limit.Fixed
	inner http.Handler // the proxy or the demo app
	top   atomic.Pointer[http.Handler]
	certs *server.Certs // nil without TLS
	// workers is the supervisor (nil without workers); prevCmd, what its
	// workers ran before the last reload that changed it, put back if
	// the roll to the new one fails.
	workers *supervisor.Supervisor
	prevCmd supervisor.Command
}

func (l *live) classify(r *http.Request) admission.Request { return l.cls.Load().Classify(r) }

// fallback is the proxy's SelectFallback: the routes' fallbacks, swapped
// with them on reload.
func (l *live) fallback(r *http.Request) *proxy.Fallback { return l.fbs.Load().choose(r) }

func (l *live) trust(r *http.Request) proxy.Trust {
	c := l.cls.Load()
	return proxy.Trust{Peer: c.Trusted(r), Proxy: c.TrustedProxy(r)}
}

func (l *live) tenantWeight(t string) float64 {
	if w := l.weights.Load(); w != nil {
		return (*w)[t]
	}
	return 0
}

func (l *live) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*l.top.Load()).ServeHTTP(w, r) }

// controllerOptions makes the Controller's reloadable options read l: the
// tenants' weights (a weight of 0 is the Controller's default of 1, as
// with no TenantWeight at all) and a fixed limit.
func (l *live) controllerOptions(cfg *config.Config, o *admission.Options) {
	w := cfg.Tenants.Weights
	l.weights.Store(&w)
	o.TenantWeight = l.tenantWeight
	l.fixed, _ = o.Limit.(*limit.Fixed)
}

// proxyOptions makes the proxy classify, trust and choose fallbacks
// through l.
func (l *live) proxyOptions(o *proxy.Options) {
	o.Classify = l.classify
	o.Trust = l.trust
	o.SelectFallback = l.fallback
}

// front wraps inner, the proxy or the demo app, in what cfg asks for
// around it (compression, the access log) and returns the handler that
// serves through the current wrapping.
func (l *live) front(cfg *config.Config, inner http.Handler, log *slog.Logger) (http.Handler, error) {
	l.inner = inner
	top, err := l.wrap(cfg, log)
	if err != nil {
		return nil, err
	}
	l.top.Store(&top)
	return l, nil
}

func (l *live) wrap(cfg *config.Config, log *slog.Logger) (http.Handler, error) {
	h, err := compression(cfg.Compression, l.inner)
	if err != nil {
		return nil, err
	}
	o := observing{serverTiming: cfg.Server.ServerTiming, traceparent: cfg.Server.GenerateTraceparent}
	if cfg.Server.AccessLog {
		o.log = log
	}
	return l.observe(h, o), nil
}

// tlsCerts loads the certificate pair when cfg enables TLS, for the
// server's TLSConfig (nil without TLS): the files are read again when they
// change, and on reload.
func (l *live) tlsCerts(cfg *config.Config, base string, log *slog.Logger) (*server.Certs, error) {
	t := cfg.Server.TLS
	if !t.Enabled() {
		return nil, nil
	}
	c, err := server.NewCerts(resolve(base, t.CertFile), resolve(base, t.KeyFile), server.CertsOptions{Logger: log})
	if err != nil {
		return nil, err
	}
	l.certs = c
	return c, nil
}

// Key classes for a reload.
type keyClass int

const (
	keyRestart keyClass = iota // needs a restart: the running value is kept
	keyLive                    // applied while requests are served
	keyRoll                    // applied to the workers started from now, and the workers are rolled
)

// liveKeys are the keys a reload applies, by path with list indexes
// removed (a key below one of them too). Every other key needs a restart.
// docs/configuration.md says when each takes effect; a test checks that it
// names them all.
var liveKeys = []string{
	"routes[].match",
	"routes[].priority",
	"routes[].cost",
	"routes[].timeout",
	"routes[].fallback",
	"tenants.key",
	"tenants.weights",
	"server.trustedPeers",
	"server.trustedProxies",
	"server.accessLog",
	"server.serverTiming",
	"server.generateTraceparent",
	"compression",
	"server.maxConcurrentRequests",
	"server.backpressure.initialLimit",
	"server.backpressure.maxLimit",
	"server.tls.certFile",
	"server.tls.keyFile",
	"workers.command",
	"workers.env",
	"workers.dir",
}

var listIndex = regexp.MustCompile(`\[\d+\]`)

// classOf says how a reload to next treats the key at path, given the
// configuration the process started with: what it has set up (TLS, the
// workers, a fixed limit) is what can change live.
func (l *live) classOf(path string, start, next *config.Config) keyClass {
	key := listIndex.ReplaceAllString(path, "[]")
	if key == "routes[]" {
		// A route added or removed: its rule is live; its fallback, if
		// any, is the proxy's (reported by reload).
		return keyLive
	}
	if !isLiveKey(key) {
		return keyRestart
	}
	switch {
	case strings.HasPrefix(key, "workers."):
		if l.workers == nil || start.Workers == nil || next.Workers == nil {
			return keyRestart
		}
		return keyRoll
	case strings.HasPrefix(key, "server.tls."):
		if l.certs == nil || !next.Server.TLS.Enabled() {
			return keyRestart // TLS switched on or off
		}
	case key == "server.maxConcurrentRequests" || strings.HasPrefix(key, "server.backpressure."):
		if l.liveLimit(start, next) < 0 {
			return keyRestart
		}
	}
	return keyLive
}

func isLiveKey(key string) bool {
	for _, k := range liveKeys {
		if key == k || strings.HasPrefix(key, k+".") {
			return true
		}
	}
	return false
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
	o, err := wire.ControllerOptions(cfg, nil, nil)
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

// errNoReload is returned by reload when the service was not started by
// `sluice serve` (sluice demo).
var errNoReload = errors.New("reload: not enabled")

// reload reads the configuration again and applies it (see the top of this
// file). On an invalid file it logs every problem, changes nothing and
// returns the error (config.List finds each problem in it).
func (s *service) reload() (*reloadReport, error) {
	rl := s.rl
	if rl == nil {
		return nil, errNoReload
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	loaded, err := config.ResolveWith(rl.path, rl.overrides)
	if err != nil {
		s.logReloadErrors(err)
		return nil, err
	}
	logWarnings(s.log, loaded.Warnings)
	next := loaded.Config
	rep := s.live.plan(rl.start, rl.last, next)
	rep.Source = loaded.Source
	if err := s.apply(rl.start, next, loaded.Source, rep); err != nil {
		s.log.Error("config reload: not applied; the running configuration is kept", "err", err)
		return nil, err
	}
	rl.last = next
	for _, p := range rep.Restart {
		s.log.Warn("config reload: a key needs a restart; its running value is kept", "key", p)
	}
	s.log.Info("config reloaded", "file", rep.Source, "applied", rep.Applied, "restartOnly", rep.Restart, "rollWorkers", rep.Roll)
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
func (s *service) logReloadErrors(err error) {
	list := config.List(err)
	for _, e := range list {
		at := e.File
		if e.Line > 0 {
			at = fmt.Sprintf("%s:%d", e.File, e.Line)
		}
		s.log.Error("config reload: invalid", "at", at, "key", e.Path, "why", e.Msg)
	}
	if len(list) == 0 {
		s.log.Error("config reload: invalid", "err", err)
	}
	s.log.Error("config reload failed; the running configuration is kept", "errors", max(len(list), 1))
}

// apply installs next's live keys. Everything that can fail comes first,
// so a failure changes nothing.
func (s *service) apply(start, next *config.Config, source string, rep *reloadReport) error {
	base := ""
	if source != "" {
		base = filepath.Dir(source)
	}
	l := &s.live
	cls, err := classifier(next)
	if err != nil {
		return err
	}
	fbs, err := newRouteFallbacks(next, cls, base)
	if err != nil {
		return err
	}
	top, err := l.wrap(next, s.log)
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
		if err := s.reloadCerts(next, base); err != nil {
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
func (s *service) reloadCerts(next *config.Config, base string) error {
	t := next.Server.TLS
	if !t.Enabled() {
		return nil // TLS off needs a restart: the pair in force is kept
	}
	cert, key := resolve(base, t.CertFile), resolve(base, t.KeyFile)
	if c, k := s.live.certs.Files(); c != cert || k != key {
		return s.live.certs.SetFiles(cert, key)
	}
	// A changed pair that does not load is logged and the previous one
	// kept: not a reason to refuse the rest of the file.
	s.live.certs.Reload()
	return nil
}

// hup is SIGHUP: reload, then roll the workers, whether their command
// changed or not (see the top of this file). An invalid file stops there.
func (s *service) hup(ctx context.Context) {
	rep, err := s.reload()
	if err != nil || s.sup == nil {
		return
	}
	s.rollWorkers(ctx, rep.Roll)
}

// rollWorkers runs a rolling restart. With newSpec, it is the restart that
// takes a reloaded command to the workers: if a worker fails to start with
// it, the previous command is put back for the workers started from now
// on, and the next reload tries again.
func (s *service) rollWorkers(ctx context.Context, newSpec bool) {
	s.log.Info("rolling restart requested")
	err := s.sup.RollingRestart(ctx)
	switch {
	case err == nil:
		s.log.Info("rolling restart done")
		return
	case errors.Is(err, supervisor.ErrRestarting) && newSpec:
		s.log.Warn("rolling restart: one is already running; the slots it has not reached yet start with the reloaded command, the others keep the previous one until the next rolling restart")
		return
	}
	s.log.Error("rolling restart", "err", err)
	if !newSpec || errors.Is(err, supervisor.ErrStopped) {
		return
	}
	s.rl.mu.Lock()
	defer s.rl.mu.Unlock()
	prev := s.live.prevCmd
	if _, err := s.live.workers.SetCommand(prev); err != nil {
		s.log.Error("rolling restart: putting the previous worker command back", "err", err)
		return
	}
	// The next reload finds the command changed and tries again.
	w := *s.rl.last.Workers
	w.Command, w.Env, w.Dir = prev.Args, envMap(prev.Env), prev.Dir
	last := *s.rl.last
	last.Workers = &w
	s.rl.last = &last
	s.log.Warn("rolling restart: the reloaded worker command failed to start; workers started from now on run the previous one")
}

// serveReload is POST /config/reload on the admin listener: 200 and what
// was applied, 422 and every error of an invalid file (file:line), 404
// when reload is not enabled. The workers are rolled, in the background,
// only when their command, environment or directory changed.
func (s *service) serveReload(w http.ResponseWriter, r *http.Request) {
	rep, err := s.reload()
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
	if rep.Roll && s.sup != nil {
		// The restart outlives this request: it is the supervisor's.
		go s.rollWorkers(context.Background(), true)
		io.WriteString(w, "workers: rolling restart started\n")
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
