package app

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// mode is what differs between front mode (*front) and library mode
// (*library).
type mode interface {
	// handler is what the front serves inside the live part.
	handler() http.Handler
	// ready is the server's readiness.
	ready() bool
	// run runs the mode's own goroutines until ctx is done or stop has
	// ended them; it returns an error if they end before (could not start).
	run(ctx context.Context) error
	// stop ends what the mode runs once the server has drained; cut is
	// done when the operator asks for the end now.
	stop(cut context.Context) error
	// stats adds the mode's part to the /stats document.
	stats(st *Stats)
}

// backends is what the supervisor and the static upstreams have in common:
// they tell the proxy which endpoints take traffic.
type backends interface {
	Run(ctx context.Context) error
	Shutdown(ctx context.Context) error
	Ready() bool
}

var (
	_ backends = (*supervisor.Supervisor)(nil)
	_ backends = (*supervisor.Static)(nil)
)

// front is front mode: the proxy, and the pool of workers or upstreams it
// dispatches to.
type front struct {
	px   *proxy.Proxy
	pool backends // *supervisor.Supervisor or *supervisor.Static
	// stopIn is how long the workers have to exit once the drain is over.
	stopIn time.Duration
}

// newFront builds the proxy and its pool; a hung worker the proxy reports
// is killed by the supervisor.
func newFront(a *App, base string, workerOut io.Writer) (*front, error) {
	cfg, log := a.cfg, a.log
	f := &front{stopIn: 5 * time.Second}
	o, err := proxyOptions(cfg, a.ctrl, log)
	if err != nil {
		return nil, err
	}
	a.live.proxyOptions(&o)
	var sup *supervisor.Supervisor
	if cfg.Workers != nil {
		// A hung worker is taken out of rotation by the proxy and killed
		// here (sup is set below, before any request); its slot restarts
		// like any crashed worker's.
		o.OnHung = func(id int) { sup.Kill(id, "hung: silent past its timeout and hang grace") }
	}
	if f.px, err = proxy.New(o); err != nil {
		return nil, err
	}
	if cfg.Workers == nil {
		f.pool, err = supervisor.NewStatic(f.px, staticOptions(cfg.Upstreams, log))
		return f, err
	}
	so := supervisorOptions(cfg.Workers, base, workerOut, log)
	if a.ctrl != nil {
		so.Settled = queueEmpty(a.ctrl)
	}
	if so.Guard, err = os.Executable(); err != nil {
		log.Warn("workers run without a guard: what a worker starts (an sh -c or npm start worker's server) outlives sluice if it is killed with SIGKILL", "err", err)
	}
	if sup, err = supervisor.New(f.px, so); err != nil {
		return nil, err
	}
	f.pool, a.live.workers = sup, sup
	// Every request has finished or been cut when the workers are
	// stopped: they get their StopTimeout to exit, and a second more.
	f.stopIn = cfg.Workers.StopTimeout + time.Second
	return f, nil
}

// queueEmpty is a rolling restart's Settled: its next worker starts once
// the queue its predecessor's start built up has been served.
func queueEmpty(c *admission.Controller) func() bool {
	return func() bool { return c.Stats().Queued == 0 }
}

func (f *front) handler() http.Handler { return f.px }
func (f *front) ready() bool           { return f.pool.Ready() && f.px.Ready() }

// run runs the pool until stop or ctx ends it. Its ErrStopped says that
// stop came before it started (a drain at once), which is no failure.
func (f *front) run(ctx context.Context) error {
	if err := f.pool.Run(ctx); !errors.Is(err, supervisor.ErrStopped) {
		return err
	}
	return nil
}

// stop closes the upgraded connections (WebSockets), which do not hold up
// the drain but end with it, then stops the workers, draining each through
// the proxy, unless cut asks for the end now.
func (f *front) stop(cut context.Context) error {
	f.px.CloseUpgrades()
	ctx, cancel := context.WithTimeout(cut, f.stopIn)
	defer cancel()
	return f.pool.Shutdown(ctx)
}

// library is library mode: the application's handler in-process, and the
// process's saturation signal that the Controller's algorithm reads.
type library struct {
	h   http.Handler
	sat *limit.Runtime
}

func newLibrary(log *slog.Logger) (*library, error) {
	rt, err := limit.NewRuntime(limit.RuntimeOptions{Logger: log})
	if err != nil {
		return nil, err
	}
	return &library{sat: rt}, nil
}

// serve sets the handler: the application behind admit.
func (l *library) serve(app func(func(http.Handler) http.Handler) http.Handler, admit func(http.Handler) http.Handler) {
	l.h = app(admit)
}

func (l *library) handler() http.Handler { return l.h }
func (l *library) ready() bool           { return true }
func (l *library) stop(context.Context) error {
	return nil
}
func (l *library) stats(*Stats) {}

// run samples the saturation signal until ctx is done.
func (l *library) run(ctx context.Context) error { return l.sat.Run(ctx, 100*time.Millisecond) }

// withPing answers path (proxy.pingPath) with 200 "pong" before h, in
// either mode: whatever the method, never queued, never sent to a worker.
// An empty path leaves every request to h.
func withPing(path string, h http.Handler) http.Handler {
	if path == "" {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			h.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "pong\n")
	})
}
