package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults applied by NewStatic to zero fields of StaticOptions: those of
// upstreams.healthCheck in sluice.yaml (internal/app's tests check that
// they agree). One passing check brings an upstream back, as in nginx: one
// that flaps is taken out again after Fails failures in a row.
const (
	DefaultHealthInterval = 2 * time.Second
	DefaultHealthTimeout  = time.Second
	DefaultHealthFails    = 3
	DefaultHealthPasses   = 1
)

// StaticOptions configures a Static. The zero value of every field except
// Upstreams is usable: NewStatic replaces zeros with the defaults documented
// on each field.
type StaticOptions struct {
	// Upstreams are the servers to check and report. An ID of zero becomes
	// the upstream's position plus one; IDs must be unique. An empty
	// Network means "tcp"; a zero Concurrency means 1. Required.
	Upstreams []Endpoint
	// HealthPath is an HTTP path (starting with "/") that answers 2xx while
	// the upstream is healthy. Empty means a check passes when a connection
	// opens.
	HealthPath string
	// Interval is the time between the starts of two checks of one
	// upstream. Zero means DefaultHealthInterval.
	Interval time.Duration
	// Timeout bounds one check. Zero means DefaultHealthTimeout.
	Timeout time.Duration
	// Fails is how many consecutive failed checks take an upstream out
	// (Balancer.Remove). Zero means DefaultHealthFails.
	Fails int
	// Passes is how many consecutive passing checks bring a failed upstream
	// back (Balancer.Add). At start-up one passing check is enough: there
	// is no flapping to guard against yet. Zero means DefaultHealthPasses.
	Passes int
	// Logger receives up and down transitions. Nil means discard.
	Logger *slog.Logger
}

func (o StaticOptions) withDefaults() StaticOptions {
	o.Upstreams = slices.Clone(o.Upstreams)
	for i := range o.Upstreams {
		u := &o.Upstreams[i]
		if u.ID == 0 {
			u.ID = i + 1
		}
		if u.Network == "" {
			u.Network = "tcp"
		}
		if u.Concurrency == 0 {
			u.Concurrency = 1
		}
	}
	if o.Interval == 0 {
		o.Interval = DefaultHealthInterval
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultHealthTimeout
	}
	if o.Fails == 0 {
		o.Fails = DefaultHealthFails
	}
	if o.Passes == 0 {
		o.Passes = DefaultHealthPasses
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Validate reports every field of o that is wrong once defaults are
// applied, naming the field and saying why; nil means NewStatic will
// accept o.
func (o StaticOptions) Validate() error {
	o = o.withDefaults()
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("supervisor: "+format, args...))
	}
	if len(o.Upstreams) == 0 {
		bad("Upstreams is empty: at least one is required")
	}
	seen := map[int]bool{}
	for i, u := range o.Upstreams {
		if seen[u.ID] {
			bad("Upstreams[%d]: ID %d is used twice", i, u.ID)
		}
		seen[u.ID] = true
		if u.Network != "tcp" && u.Network != "unix" {
			bad("Upstreams[%d]: Network is %q: want tcp or unix", i, u.Network)
		}
		if u.Addr == "" {
			bad("Upstreams[%d]: Addr is empty", i)
		}
		if u.Concurrency < 0 {
			bad("Upstreams[%d]: Concurrency is %d: must be >= 0 (0 means 1)", i, u.Concurrency)
		}
	}
	if o.HealthPath != "" && !strings.HasPrefix(o.HealthPath, "/") {
		bad("HealthPath is %q: must start with /", o.HealthPath)
	}
	if o.Interval < 0 {
		bad("Interval is %v: must be >= 0 (0 means the default)", o.Interval)
	}
	if o.Timeout < 0 {
		bad("Timeout is %v: must be >= 0 (0 means the default)", o.Timeout)
	}
	if o.Fails < 0 {
		bad("Fails is %d: must be >= 0 (0 means the default)", o.Fails)
	}
	if o.Passes < 0 {
		bad("Passes is %d: must be >= 0 (0 means the default)", o.Passes)
	}
	return errors.Join(errs...)
}

// Static reports upstreams that sluice does not start (servers it is
// pointed at) to a Balancer, from active health checks: each upstream is
// checked every Interval; Fails consecutive failures Remove it, Passes
// consecutive passes Add it again.
//
// Create it with NewStatic; the zero value is not usable. All methods are
// safe for concurrent use. Run checks until its ctx is done or Shutdown is
// called; a Static runs once.
type Static struct {
	opts StaticOptions
	bal  Balancer
	env  env
	log  *slog.Logger
	ups  []*upstream
	quit chan struct{} // closed by Shutdown

	mu      sync.Mutex
	started bool
	closed  bool
}

// upstream is one checked server. mu serialises its Balancer calls with
// the changes of up, so that Add has returned before Shutdown's Drain.
type upstream struct {
	ep Endpoint

	mu        sync.Mutex
	up        bool
	stopped   bool // Shutdown took it: no more Add or Remove from checks
	checks    int
	passes    int // consecutive
	fails     int // consecutive
	lastCheck time.Time
	lastErr   error
}

// NewStatic returns a Static that will report to bal, with o's zero fields
// replaced by their defaults. It checks nothing until Run.
func NewStatic(bal Balancer, o StaticOptions) (*Static, error) {
	return newStatic(bal, o, realEnv())
}

func newStatic(bal Balancer, o StaticOptions, e env) (*Static, error) {
	if bal == nil {
		return nil, errors.New("supervisor: Balancer is nil")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	st := &Static{opts: o, bal: bal, env: e, log: o.Logger, quit: make(chan struct{})}
	for _, ep := range o.Upstreams {
		st.ups = append(st.ups, &upstream{ep: ep})
	}
	return st, nil
}

// Run checks every upstream at once, then every Interval, until ctx is
// done or Shutdown is called, and returns when its checks have stopped.
// Upstreams that are up when ctx ends stay Added: Shutdown drains them. Run
// returns ErrStopped if Shutdown came first, and an error if called twice.
func (st *Static) Run(ctx context.Context) error {
	st.mu.Lock()
	if st.started {
		st.mu.Unlock()
		return errors.New("supervisor: Static.Run called twice")
	}
	st.started = true
	closed := st.closed
	st.mu.Unlock()
	if closed {
		return ErrStopped
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for _, u := range st.ups {
		wg.Go(func() { st.watch(ctx, u) })
	}
	select {
	case <-ctx.Done():
	case <-st.quit:
		cancel()
	}
	wg.Wait()
	return nil
}

// watch checks u every Interval until ctx is done.
func (st *Static) watch(ctx context.Context, u *upstream) {
	t := time.NewTicker(st.opts.Interval)
	defer t.Stop()
	for {
		err := st.env.check(ctx, u.ep, st.opts.HealthPath, st.opts.Timeout)
		if ctx.Err() != nil {
			return // a check cut short by the end of Run says nothing
		}
		st.observe(u, err, time.Now())
		select {
		case <-t.C:
		case <-ctx.Done():
			return
		}
	}
}

// observe applies one check's result to u, Adding or Removing it.
func (st *Static) observe(u *upstream, err error, now time.Time) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.stopped {
		return
	}
	u.checks++
	u.lastCheck, u.lastErr = now, err
	if err == nil {
		u.passes, u.fails = u.passes+1, 0
	} else {
		u.passes, u.fails = 0, u.fails+1
	}
	switch {
	case !u.up && err == nil && (u.passes >= st.opts.Passes || u.checks == 1):
		u.up = true
		st.bal.Add(u.ep)
		st.log.Info("upstream up", "upstream", u.ep.ID, "addr", u.ep.Addr, "passes", u.passes)
	case u.up && u.fails >= st.opts.Fails:
		u.up = false
		st.bal.Remove(u.ep.ID)
		st.log.Warn("upstream down", "upstream", u.ep.ID, "addr", u.ep.Addr, "fails", u.fails, "err", err)
	case !u.up && err != nil && u.checks == 1:
		st.log.Warn("upstream not healthy at start-up", "upstream", u.ep.ID, "addr", u.ep.Addr, "err", err)
	}
}

// Ready reports whether at least one upstream is up and Shutdown has not
// been called.
func (st *Static) Ready() bool {
	st.mu.Lock()
	closed := st.closed
	st.mu.Unlock()
	if closed {
		return false
	}
	for _, u := range st.ups {
		u.mu.Lock()
		up := u.up
		u.mu.Unlock()
		if up {
			return true
		}
	}
	return false
}

// Shutdown stops the checks and Drains every upstream that is up through
// the Balancer, in parallel (their in-flight requests finish), then Removes
// it. It returns when all drains have ended, with their errors (ctx.Err()
// for those cut short). Ready is false from the moment it is called.
func (st *Static) Shutdown(ctx context.Context) error {
	st.mu.Lock()
	if !st.closed {
		st.closed = true
		close(st.quit)
	}
	st.mu.Unlock()
	errs := make([]error, len(st.ups))
	var wg sync.WaitGroup
	for i, u := range st.ups {
		u.mu.Lock()
		wasUp := u.up
		u.up, u.stopped = false, true
		u.mu.Unlock()
		if !wasUp {
			continue
		}
		wg.Go(func() {
			if err := st.bal.Drain(ctx, u.ep.ID); err != nil {
				errs[i] = fmt.Errorf("supervisor: drain upstream %d: %w", u.ep.ID, err)
			}
			st.bal.Remove(u.ep.ID)
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// UpstreamInfo is one upstream in a StaticStats snapshot.
type UpstreamInfo struct {
	ID        int       `json:"id"`
	Network   string    `json:"network"`
	Addr      string    `json:"addr"`
	Up        bool      `json:"up"`
	Passes    int       `json:"passes"` // consecutive
	Fails     int       `json:"fails"`  // consecutive
	LastCheck time.Time `json:"lastCheck"`
	LastError string    `json:"lastError,omitempty"`
}

// StaticStats is a snapshot of a Static for the admin page.
type StaticStats struct {
	Ready     bool           `json:"ready"`
	Upstreams []UpstreamInfo `json:"upstreams"`
}

// Stats returns a snapshot, upstreams by ID.
func (st *Static) Stats() StaticStats {
	s := StaticStats{Ready: st.Ready()}
	for _, u := range st.ups {
		u.mu.Lock()
		ui := UpstreamInfo{
			ID: u.ep.ID, Network: u.ep.Network, Addr: u.ep.Addr, Up: u.up,
			Passes: u.passes, Fails: u.fails, LastCheck: u.lastCheck,
		}
		if u.lastErr != nil {
			ui.LastError = u.lastErr.Error()
		}
		u.mu.Unlock()
		s.Upstreams = append(s.Upstreams, ui)
	}
	slices.SortFunc(s.Upstreams, func(a, b UpstreamInfo) int { return cmp.Compare(a.ID, b.ID) })
	return s
}
