// Package app is the assembly of `sluice serve`: from a validated
// configuration it builds the components of either mode and runs them.
//
// In front mode (workers or upstreams in the configuration) the front
// handler is the proxy, and the pool behind it is the supervisor of the
// worker processes or the health checker of static upstreams. In library
// mode it is an application handler (Options.Library) behind the admission
// middleware, with the process's own saturation signal, as a Go service
// using the library would run. Around either: the live part (compression,
// the request IDs and the access log, swapped by a reload), then the
// response counter of the admin listener, then Options.WrapFront.
//
// Run owns every goroutine the assembly starts, in one run group
// (github.com/oklog/run): the server, the pool or the saturation sampler,
// the admin listener, the SIGHUP loop and the rolling restarts. The server
// is the group's lead: when its context is done it drains, then stops the
// workers; every other actor stops only once it has finished, and Run
// returns when all of them have.
package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
	"github.com/sluicehq/sluice/quota"
	"github.com/sluicehq/sluice/server"
)

// Options is what New assembles. Config is required, and Library in
// library mode; every other field's zero value works.
type Options struct {
	// Config is the validated configuration. Required.
	Config *config.Config
	// Source is the file Config was read from, "" for the built-in
	// defaults: the paths in it (fallback files, TLS files, the workers'
	// directory) are relative to its directory.
	Source string
	// Logger receives sluice's records. Nil discards them.
	Logger *slog.Logger
	// WorkerOutput receives the workers' output, each line prefixed with
	// its worker. Nil makes each line a record of Logger (msg, worker,
	// stream): one format for a JSON log pipeline.
	WorkerOutput io.Writer
	// WrapFront, if set, wraps the whole front handler, outermost: it sees
	// every request the server hands on (served, shed, 502, fallback), in
	// both modes, and stays in place across reloads. A reqinfo.Info it puts
	// in the request's context is the one the request is served with.
	WrapFront func(http.Handler) http.Handler
	// Library is what library mode serves: given admit, the admission
	// middleware over the Controller (classifying by the configuration's
	// routes and trust, as they are after the last reload), it returns the
	// application's handler wrapped by it, as a Go service wraps its own.
	// Required in library mode; not used in front mode.
	Library func(admit func(http.Handler) http.Handler) http.Handler
	// Reload, if set, is where a reload reads the configuration again
	// (SIGHUP on Hangup, POST /config/reload on the admin listener). Nil:
	// reload is not enabled, and POST /config/reload answers 404.
	Reload *Reload
	// Hangup delivers SIGHUP: each value is a reload of the configuration
	// and a rolling restart of the workers. Nil: none.
	Hangup <-chan os.Signal
	// Version is the version sluice_build_info reports; "" lets it read
	// the module's from the build.
	Version string
	// Listener, if set, is where the front serves, in place of a listener
	// on server.listen. Run closes it.
	Listener net.Listener
}

// Reload is where a reload reads the configuration: the file as given on
// the command line ("" finds it as config.ResolveWith does) and what the
// command line sets over it.
type Reload struct {
	Path      string
	Overrides config.Overrides
}

// Validate reports every field of o that New cannot use, one error each.
func (o Options) Validate() error {
	var errs []error
	switch {
	case o.Config == nil:
		errs = append(errs, errors.New("app: Options.Config is required"))
	case !o.Config.FrontMode() && o.Library == nil:
		errs = append(errs, errors.New("app: Options.Library is required in library mode (the configuration has no workers and no upstreams)"))
	}
	return errors.Join(errs...)
}

// App is one assembled `sluice serve`: build it with New, run it once with
// Run. Its methods are safe for concurrent use.
type App struct {
	cfg   *config.Config
	log   *slog.Logger
	ctrl  *admission.Controller
	quota *quota.Limiter // nil: no tenants.quota
	// closeQuota closes the quota's store, once Run has stopped its leases.
	closeQuota func() error
	srv        *server.Server
	mode       mode         // *front or *library
	adm        *adminServer // nil when the admin listener is off
	rl         *reloader    // nil when reload is not enabled
	live       live         // what a reload changes while serving
	hup        <-chan os.Signal
	ln         net.Listener // Options.Listener; nil: listen on server.listen
	version    string
	// tasks are the rolling restarts the admin listener and reloads
	// start: they run under the group's context and are waited for.
	tasks tasks

	// cutCtx is done at the second signal (Cut): the drain is cut and the
	// workers are killed without waiting out their stop timeout.
	cutCtx context.Context
	cutAll context.CancelFunc
}

// New builds the components o configures. Nothing runs until Run.
func New(o Options) (*App, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	a := &App{cfg: o.Config, log: cmp.Or(o.Logger, slog.New(slog.DiscardHandler)), hup: o.Hangup, ln: o.Listener, version: o.Version}
	a.cutCtx, a.cutAll = context.WithCancel(context.Background())
	if o.Reload != nil {
		a.rl = &reloader{path: o.Reload.Path, overrides: o.Reload.Overrides, start: a.cfg, last: a.cfg}
	}
	base := baseDir(o.Source)
	var lib *library
	if !a.cfg.FrontMode() {
		var err error
		if lib, err = newLibrary(a.log); err != nil {
			return nil, err
		}
	}
	if err := a.newController(lib); err != nil {
		return nil, err
	}
	if err := a.build(o, base, lib); err != nil {
		a.ctrl.Close() // its sample-window goroutine
		a.closeStore()
		return nil, err
	}
	return a, nil
}

// build builds the rest over the Controller: the routes, the mode, the
// server and the admin listener.
func (a *App) build(o Options, base string, lib *library) error {
	if err := a.live.routes(a.cfg, base); err != nil {
		return err
	}
	if lib != nil {
		lib.serve(o.Library, a.admit)
		a.mode = lib
	} else {
		f, err := newFront(a, base, o.WorkerOutput)
		if err != nil {
			return err
		}
		a.mode = f
	}
	return a.newServer(base, o.WrapFront)
}

// newController builds the admission Controller: in library mode over the
// process's own saturation signal.
func (a *App) newController(lib *library) error {
	var sig limit.Signal
	if lib != nil {
		sig = lib.sat
	}
	o, err := ControllerOptions(a.cfg, sig, a.log)
	if err != nil {
		return err
	}
	a.live.controllerOptions(a.cfg, &o)
	qo, closeQuota, ok, err := quotaOptions(a.cfg, a.log)
	if err != nil {
		return err
	}
	if ok {
		if a.quota, err = quota.New(qo); err != nil {
			closeQuota()
			return err
		}
		o.Quota, a.closeQuota = a.quota, closeQuota
	}
	if a.ctrl, err = admission.New(o); err != nil {
		a.closeStore()
	}
	return err
}

// closeStore closes the quota's store, if any.
func (a *App) closeStore() {
	if a.closeQuota != nil {
		a.closeQuota()
	}
}

// admit is the admission middleware of library mode.
func (a *App) admit(h http.Handler) http.Handler {
	return (&admission.Middleware{Controller: a.ctrl, Classify: a.live.classify, Observe: observeAdmission}).Wrap(h)
}

// newServer builds the handler around the mode's (the ping path, the live
// part, the admin's response counter, wrap) and the server that serves it.
func (a *App) newServer(base string, wrap func(http.Handler) http.Handler) error {
	h, err := a.live.front(a.cfg, withPing(a.cfg.Proxy.PingPath, a.mode.handler()), a.log)
	if err != nil {
		return err
	}
	// Every response of the front is counted by status (the probes,
	// answered by the server before it, are not), outside the live part so
	// that sheds, 502s and 504s are counted as sent.
	var responses *admin.Responses
	if a.cfg.Admin.Enabled() {
		responses = new(admin.Responses)
		h = responses.Wrap(h)
	}
	if wrap != nil {
		h = wrap(h)
	}
	certs, err := a.live.tlsCerts(a.cfg, base, a.log)
	if err != nil {
		return err
	}
	a.srv = newServer(a.cfg.Server, h, a.mode.ready, a.log)
	// Queued requests keep their chance during the drain; those still
	// waiting when it is cut are shed with reason shutdown.
	a.srv.OnCut = a.ctrl.Close
	if certs != nil {
		// The pair is read again when its files change, and on reload.
		a.srv.TLSConfig = certs.TLSConfig()
	}
	if responses != nil {
		a.adm = newAdminServer(a, responses)
	}
	return nil
}

// Cut is the second SIGTERM or SIGINT: the operator wants the process gone
// now, so requests in flight are cut and the workers killed at once.
func (a *App) Cut() {
	a.cutAll()
	a.srv.Cut()
}

// Config returns the configuration the App was built with (a reload does
// not change it).
func (a *App) Config() *config.Config { return a.cfg }

// Supervisor returns the supervisor of the workers, or nil without
// supervised workers (library mode, static upstreams).
func (a *App) Supervisor() *supervisor.Supervisor {
	if f, ok := a.mode.(*front); ok {
		s, _ := f.pool.(*supervisor.Supervisor)
		return s
	}
	return nil
}

// LogWarnings logs a configuration's warnings: keys that have no effect,
// and values that disable a safety.
func LogWarnings(log *slog.Logger, warnings []*config.Error) {
	for _, w := range warnings {
		msg := "config: a key has no effect"
		if w.Unsafe() {
			msg = "config: a value disables a safety"
		}
		log.Warn(msg, "at", at(w), "key", w.Path, "why", w.Msg)
	}
}

// at is where in its file a configuration error is: file:line, or the
// file alone.
func at(e *config.Error) string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	return e.File
}

func baseDir(source string) string {
	if source == "" {
		return ""
	}
	return filepath.Dir(source)
}

func numCPU() int { return runtime.GOMAXPROCS(0) } // honours a cgroup CPU quota
