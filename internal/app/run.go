package app

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"

	"github.com/oklog/run"

	"github.com/sluicehq/sluice/server"
)

// Run serves until ctx is done, drains (or is cut by Cut), then stops the
// workers and everything else it started, and returns once all of it has
// ended. It returns nil after a complete drain; otherwise an error saying
// what went wrong, which it has logged. Run may be called once.
//
// Every goroutine is an actor of one run group, each with a stop and a
// wait. The server leads: the first of ctx being done and another actor
// failing (the pool) makes it drain, and it then stops the workers. The
// others (the pool's Run, the saturation sampler, the admin listener, the
// SIGHUP loop, the rolling restarts) stop only once it has finished: the
// admin listener answers through the whole drain, and the workers are
// stopped gracefully, never by the cancellation of their Run.
func (a *App) Run(ctx context.Context) error {
	defer a.cutAll() // releases cutCtx
	ln, admLn, err := a.listen(ctx)
	if err != nil {
		a.log.Error("listen", "err", err)
		a.ctrl.Close()
		a.closeStore()
		return err
	}
	// bg is the context of every actor but the server: cancelled once the
	// server has finished.
	bg, stopBG := context.WithCancel(context.Background())
	defer stopBG()
	a.tasks.start(bg)
	// stopping is closed when the server has drained and begins to stop
	// the pool; served, when it has finished.
	stopping, served := make(chan struct{}), make(chan struct{})
	stopOthers := sync.OnceFunc(func() { <-served; stopBG() })
	drainCtx, drain := context.WithCancel(ctx)
	defer drain()

	var (
		g              run.Group
		frontErr, pool error
	)
	g.Add(func() error {
		defer close(served)
		frontErr = a.serve(drainCtx, ln, stopping)
		return frontErr
	}, func(error) { drain() })
	g.Add(func() error {
		// A return before the server stops the pool is a failure (it
		// could not start): the server drains.
		err := a.mode.run(bg)
		select {
		case <-stopping:
			return nil
		default:
		}
		pool = cmp.Or(err, errors.New("app: the pool stopped on its own"))
		a.log.Error("pool stopped; draining", "err", pool)
		return pool
	}, func(error) { stopOthers() })
	if a.adm != nil {
		g.Add(func() error { a.adm.serve(admLn, a, bg.Done()); return nil },
			func(error) { stopOthers(); a.adm.shutdown() })
	}
	if a.hup != nil {
		g.Add(func() error { a.hangups(bg); return nil }, func(error) { stopOthers() })
	}
	g.Add(func() error { <-bg.Done(); a.tasks.wait(); return nil }, func(error) { stopOthers() })
	if a.quota != nil {
		// Leases until the server has finished: requests draining still
		// take their tenants' tokens.
		g.Add(func() error { return a.quota.Run(bg) }, func(error) { stopOthers() })
	}
	g.Run()
	a.closeStore()
	return errors.Join(frontErr, pool)
}

// listen opens the front's listener (Options.Listener, else one on
// server.listen) and the admin listener, before anything starts: an
// address in use is an error at once, with no worker started.
func (a *App) listen(ctx context.Context) (front, adm net.Listener, err error) {
	front = a.ln
	if front == nil {
		var lc net.ListenConfig
		if front, err = lc.Listen(context.WithoutCancel(ctx), "tcp", cmp.Or(a.srv.Addr, server.DefaultAddr)); err != nil {
			return nil, nil, fmt.Errorf("server: %w%s", err, inUse(err, "server.listen in the file, or --listen, to a free address"))
		}
	}
	if a.adm != nil {
		if adm, err = a.adm.listen(); err != nil {
			front.Close()
			return nil, nil, err
		}
	}
	return front, adm, nil
}

// inUse says what to change when err is an address in use: the key (and
// the flag of sluice serve that sets it), for "set ...".
func inUse(err error, key string) string {
	if !errors.Is(err, syscall.EADDRINUSE) {
		return ""
	}
	return " (another process listens there: set " + key + ")"
}

// serve is the server's actor: it serves on ln until ctx is done, drains,
// then stops the Controller's queue and, having closed stopping, what the
// mode runs.
func (a *App) serve(ctx context.Context, ln net.Listener, stopping chan<- struct{}) error {
	err := a.srv.Serve(ctx, ln)
	switch {
	case errors.Is(err, server.ErrCut):
		a.log.Error("drain cut short: requests were still running at shutdownTimeout", "err", err)
	case err != nil:
		a.log.Error("server", "err", err)
	}
	a.ctrl.Close()
	close(stopping)
	if serr := a.mode.stop(a.cutCtx); serr != nil {
		a.log.Error("stopping workers", "err", serr)
		err = errors.Join(err, serr)
	}
	if err == nil {
		a.log.Info("drained; exiting")
	}
	return err
}

// hangups reloads on each SIGHUP until ctx is done.
func (a *App) hangups(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-a.hup:
			a.hangup(ctx)
		}
	}
}

// tasks runs the work that outlives the request that asked for it (a
// rolling restart) under the run group's context, and waits for it at
// stop. The zero value takes nothing until start.
type tasks struct {
	mu      sync.Mutex
	ctx     context.Context // nil before start
	stopped bool
	wg      sync.WaitGroup
}

func (t *tasks) start(ctx context.Context) {
	t.mu.Lock()
	t.ctx = ctx
	t.mu.Unlock()
}

// Go runs f in a goroutine of its own under the group's context, and
// reports whether it did: not before Run, nor once Run is stopping.
func (t *tasks) Go(f func(ctx context.Context)) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ctx == nil || t.stopped || t.ctx.Err() != nil {
		return false
	}
	t.wg.Go(func() { f(t.ctx) })
	return true
}

// wait takes no more tasks and waits for those running; their context is
// done by then.
func (t *tasks) wait() {
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	t.wg.Wait()
}
