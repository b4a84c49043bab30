package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"time"
)

var (
	// ErrThrottled is wrapped by the error of a request that adaptive
	// throttling rejected locally, without sending it.
	ErrThrottled = errors.New("client: throttled")
	// ErrCircuitOpen is wrapped by the error of a request that a host's
	// circuit breaker rejected, without sending it.
	ErrCircuitOpen = errors.New("client: circuit open")
)

// Transport is an http.RoundTripper for outbound calls that does not
// amplify a downstream overload: it propagates deadlines and priorities,
// retries within bounds, throttles and breaks circuits per host. See the
// package documentation for the rules.
//
// The zero value is ready to use, with http.DefaultTransport underneath and
// the default Options. A Transport is safe for concurrent use and must not
// be copied after first use. RoundTrip blocks while it waits to retry; it
// stops waiting when the request's context is done.
type Transport struct {
	base http.RoundTripper
	opts Options

	once sync.Once
	cfg  config

	mu struct { // lock order: Transport.mu before host.mu
		sync.Mutex
		hosts   map[string]*host
		sweepAt int // sweep idle hosts when the map grows past this
	}
	budgetMu sync.Mutex
	budget   budget

	requests, attempts, retries, retriesDenied, throttled, circuitOpen, expired atomic.Uint64
}

var _ http.RoundTripper = (*Transport)(nil)

// New returns a Transport sending through base (nil means
// http.DefaultTransport) and bounded by o, or o's validation error.
func New(base http.RoundTripper, o Options) (*Transport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Transport{base: base, opts: o}, nil
}

func (t *Transport) init() {
	t.once.Do(func() {
		t.cfg = t.opts.config()
		if t.base == nil {
			t.base = http.DefaultTransport
		}
		t.budget = newBudget(t.cfg.retryRatio, t.cfg.retryMinRate, t.cfg.retryWindow)
		t.mu.hosts = make(map[string]*host)
		t.mu.sweepAt = 64
	})
}

// RoundTrip sends req through the base RoundTripper, attempting it up to
// MaxAttempts times. It returns the last response or error; a request not
// sent at all fails with an error wrapping ErrThrottled, ErrCircuitOpen or
// context.DeadlineExceeded. Like any RoundTripper it closes req.Body, and
// it does not modify req.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.init()
	ctx := req.Context()
	now := time.Now()
	t.requests.Add(1)
	t.budgetMu.Lock()
	t.budget.request(now)
	t.budgetMu.Unlock()

	h := t.host(hostKey(req), now)
	retryable := t.cfg.maxAttempts > 1 && idempotent(req)
	for n := 1; ; n++ {
		if n > 1 {
			now = time.Now()
		}
		resp, again, err := t.attempt(ctx, req, h, n, now, retryable)
		if !again || n >= t.cfg.maxAttempts {
			return resp, err
		}
		wait, ok := t.wait(ctx, resp, n)
		if !ok {
			return resp, err
		}
		t.budgetMu.Lock()
		ok = t.budget.tryRetry(time.Now())
		t.budgetMu.Unlock()
		if !ok {
			t.retriesDenied.Add(1)
			return resp, err
		}
		t.retries.Add(1)
		if resp != nil {
			drain(resp)
		}
		if err := sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// wait returns how long to wait before retry number n, and false when the
// wait is not worth it: the server asks for more than MaxWait, or the
// request's deadline would come first.
func (t *Transport) wait(ctx context.Context, resp *http.Response, n int) (time.Duration, bool) {
	now := time.Now()
	var d time.Duration
	if ra, ok := retryAfterOf(resp, now); ok {
		if ra > t.cfg.maxWait {
			return 0, false
		}
		d = spread(ra, t.cfg.rand())
	} else {
		d = backoff(n, t.cfg.backoffBase, t.cfg.backoffCap, t.cfg.rand())
	}
	if dl, ok := ctx.Deadline(); ok && dl.Sub(now.Add(d)) < time.Millisecond {
		return 0, false
	}
	return d, true
}

func retryAfterOf(resp *http.Response, now time.Time) (time.Duration, bool) {
	if resp == nil {
		return 0, false
	}
	return retryAfter(resp.Header, now)
}

// sleep waits d, or returns an error wrapping ctx.Err() if ctx is done first.
func sleep(ctx context.Context, d time.Duration) error {
	if d > 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		select {
		case <-tm.C:
		case <-ctx.Done():
		}
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("client: gave up waiting to retry: %w", err)
	}
	return nil
}

// writeWatch learns from the base RoundTripper's trace whether it wrote
// any of the request: an error before that is safe to retry whatever the
// method, since the server saw nothing.
type writeWatch struct {
	wrote atomic.Bool
	trace httptrace.ClientTrace
}

// attempt sends attempt number n of req, unless the deadline, the breaker
// or the throttle refuses it, and reports whether its result may be retried:
// a 503 or 429, or an error that happened before anything was written. A
// local refusal is never retried.
func (t *Transport) attempt(ctx context.Context, req *http.Request, h *host, n int, now time.Time, retryable bool) (resp *http.Response, again bool, err error) {
	ms, hasDeadline := budgetOf(ctx, now)
	if hasDeadline && ms < 1 {
		t.expired.Add(1)
		closeBody(req, n)
		return nil, false, fmt.Errorf("client: no time left before the deadline: %w", context.DeadlineExceeded)
	}
	tk, err := h.admit(now, t.cfg.rand())
	if err != nil {
		if errors.Is(err, ErrThrottled) {
			t.throttled.Add(1)
		} else {
			t.circuitOpen.Add(1)
		}
		closeBody(req, n)
		return nil, false, err
	}

	out, watch, err := outgoing(ctx, req, n, ms, hasDeadline, retryable)
	if err != nil {
		h.done(now, tk, outcome{accepted: true, ignored: true})
		return nil, false, err
	}

	t.attempts.Add(1)
	resp, err = t.base.RoundTrip(out)
	from, to := h.done(time.Now(), tk, judge(ctx, resp, err))
	if from != to {
		t.logTransition(h.name, from, to, resp, err)
	}
	switch {
	case !retryable || ctx.Err() != nil:
	case err != nil:
		again = !watch.wrote.Load()
	default:
		again = shedStatus(resp.StatusCode)
	}
	return resp, again, err
}

// outgoing is what attempt n of req sends: req with the caller's priority
// and remaining budget (ms, when hasDeadline) in its headers, a watch on
// whether anything was written when the attempt may be retried, and a
// fresh body for a retry. req itself is not modified.
func outgoing(ctx context.Context, req *http.Request, n int, ms int64, hasDeadline, retryable bool) (*http.Request, *writeWatch, error) {
	prio, hasPrio := priorityOf(ctx)
	if !hasPrio && !hasDeadline && !retryable {
		return req, nil, nil
	}
	var watch *writeWatch
	actx := ctx
	if retryable {
		watch = new(writeWatch)
		watch.trace.WroteHeaders = func() { watch.wrote.Store(true) }
		actx = httptrace.WithClientTrace(ctx, &watch.trace)
	}
	out := req.WithContext(actx)
	if hasPrio || hasDeadline {
		out.Header = req.Header.Clone()
		if out.Header == nil {
			out.Header = make(http.Header, 2)
		}
		propagate(out.Header, prio, hasPrio, ms, hasDeadline)
	}
	if n > 1 && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			return nil, nil, fmt.Errorf("client: replaying the request body: %w", err)
		}
		out.Body = body
	}
	return out, watch, nil
}

// closeBody closes the body of a request that will not be sent, as a
// RoundTripper must; after the first attempt the base has closed it.
func closeBody(req *http.Request, n int) {
	if n == 1 && req.Body != nil {
		_ = req.Body.Close()
	}
}

func (t *Transport) logTransition(name string, from, to BreakerState, resp *http.Response, err error) {
	if t.cfg.log == nil {
		return
	}
	attrs := []any{slog.String("host", name), slog.String("from", from.String()), slog.String("to", to.String())}
	switch {
	case err != nil:
		attrs = append(attrs, slog.String("error", err.Error()))
	case resp != nil:
		attrs = append(attrs, slog.Int("status", resp.StatusCode))
	}
	if to == BreakerOpen {
		t.cfg.log.Warn("client: circuit opened", attrs...)
		return
	}
	t.cfg.log.Info("client: circuit closed", attrs...)
}

// host returns the state for the named host, creating it if needed.
func (t *Transport) host(name string, now time.Time) *host {
	t.mu.Lock()
	defer t.mu.Unlock()
	if h, ok := t.mu.hosts[name]; ok {
		return h
	}
	if len(t.mu.hosts) >= t.mu.sweepAt {
		t.sweepLocked(now)
		t.mu.sweepAt = max(64, 2*len(t.mu.hosts))
	}
	h := &host{name: name}
	h.mu.th = newThrottle(t.cfg.throttleK, t.cfg.throttleMaxP, t.cfg.throttleWindow, t.cfg.throttleMinRate)
	h.mu.br = newBreaker(t.cfg.breaker)
	h.mu.last = now
	t.mu.hosts[name] = h
	return h
}

// sweepLocked forgets hosts nobody has called for longer than any window
// or cooldown, so that a client of many hosts does not grow forever.
func (t *Transport) sweepLocked(now time.Time) {
	after := max(t.cfg.throttleWindow, t.cfg.breaker.windowSize, t.cfg.breaker.cooldown)
	for name, h := range t.mu.hosts {
		if h.idle(now, after) {
			delete(t.mu.hosts, name)
		}
	}
}

// CloseIdleConnections closes the base RoundTripper's idle connections, if
// it has a CloseIdleConnections method (http.Client.CloseIdleConnections
// calls this).
func (t *Transport) CloseIdleConnections() {
	t.init()
	if c, ok := t.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}
