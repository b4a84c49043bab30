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
// Every goroutine is an actor of one run group (github.com/oklog/run): the
// server, the pool (or the saturation sampler), the admin listener, the
// SIGHUP loop, the rolling restarts and the quota's leases. The server
// leads, and the group has one interrupt: the server drains. It drains
// when ctx is done or when another actor returns (the pool could not
// start), then stops the workers gracefully, and only then ends others,
// the context every other actor runs under. So the admin listener answers
// through the whole drain, and no worker is stopped by the cancellation of
// the pool's Run.
func (a *App) Run(ctx context.Context) error {
	defer a.cutAll() // releases cutCtx
	ln, admLn, err := a.listen(ctx)
	if err != nil {
		a.log.Error("listen", "err", err)
		a.ctrl.Close()
		a.closeStore()
		return err
	}
	ctx, drain := context.WithCancel(ctx)
	defer drain()
	others, endOthers := context.WithCancel(context.Background())
	defer endOthers()
	a.tasks.start(others)

	var (
		g                 run.Group
		serveErr, poolErr error
	)
	// Whichever actor returns first, the others are interrupted alike: the
	// server drains, and its end ends the others.
	add := func(execute func() error) { g.Add(execute, func(error) { drain() }) }
	add(func() error {
		defer endOthers()
		serveErr = a.serve(ctx, ln)
		return serveErr
	})
	add(func() error {
		// The pool stops when the server stops it, after the drain; one
		// that ends while the server still serves has failed.
		poolErr = a.mode.run(others)
		if poolErr == nil && ctx.Err() == nil {
			poolErr = errors.New("app: the pool stopped on its own")
		}
		if poolErr != nil {
			a.log.Error("pool stopped; draining", "err", poolErr)
		}
		return poolErr
	})
	if a.adm != nil {
		add(func() error { a.adm.serve(others, admLn, a.log); return nil })
	}
	if a.hup != nil {
		add(func() error { a.hangups(others); return nil })
	}
	add(func() error { <-others.Done(); a.tasks.wait(); return nil })
	if a.quota != nil {
		// Leases until the server has finished: requests draining still
		// take their tenants' tokens.
		add(func() error { return a.quota.Run(others) })
	}
	g.Run()
	a.closeStore()
	return errors.Join(serveErr, poolErr)
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
// then stops the Controller's queue and what the mode runs.
func (a *App) serve(ctx context.Context, ln net.Listener) error {
	err := a.srv.Serve(ctx, ln)
	switch {
	case errors.Is(err, server.ErrCut):
		// err says why: shutdownTimeout passed, or a second signal.
		a.log.Error("drain cut short", "err", err)
	case err != nil:
		a.log.Error("server", "err", err)
	}
	a.ctrl.Close()
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
