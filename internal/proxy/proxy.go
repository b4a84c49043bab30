package proxy

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/poison"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/upstream"
	"github.com/sluicehq/sluice/limit"
)

// Proxy is an http.Handler that sends each request to an idle worker slot,
// and a supervisor.Balancer that the supervisor tells which workers exist.
//
// Create one with New. All methods are safe for concurrent use. ServeHTTP
// blocks while the request waits for admission and for its worker; the
// worker's side of a request may outlive ServeHTTP (after a 504 or a client
// that hung up) until the worker has finished.
type Proxy struct {
	o    Options
	c    *admission.Controller
	log  *slog.Logger
	pool pool
	bufs sync.Pool // *[]byte of bufSize
	runs runners   // the goroutines exchanges run on

	wasted          atomic.Uint64
	neverDispatched atomic.Uint64
	badGateway      atomic.Uint64
	gatewayTimeout  atomic.Uint64
	noWorker        atomic.Uint64
	retries         atomic.Uint64
	dialFailures    atomic.Uint64
	hung            atomic.Uint64
	aborted         atomic.Uint64
	fallbacks       atomic.Uint64
	tooLarge        atomic.Uint64
	bodyTimeouts    atomic.Uint64
	bodyRefused     atomic.Uint64
	streamedForMem  atomic.Uint64
	unsolicited     atomic.Uint64
	// unsolicitedLog is when the last unsolicited-bytes warning was
	// logged (UnixNano), so that a worker that does it on every response
	// is logged once a second, not per response.
	unsolicitedLog atomic.Int64

	up      upgrades // upgraded connections (upgrade.go)
	streams streams  // streams that hold no render slot (streams.go)

	// mem bounds the memory of buffered bodies, requests and responses.
	mem budget
}

var (
	_ http.Handler        = (*Proxy)(nil)
	_ supervisor.Balancer = (*Proxy)(nil)
)

const bufSize = 32 << 10

// New returns a Proxy with no workers: until the first Add every request
// gets 503 "no worker". It sets the Controller's ceiling to the slots (none
// yet: the Controller clamps that to 1).
func New(o Options) (*Proxy, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	p := &Proxy{o: o, c: o.Controller, log: o.Logger}
	p.mem.max = o.MaxBufferedBytes
	p.bufs.New = func() any { b := make([]byte, bufSize); return &b }
	p.pool.init(o.SlowStart, o.Lookahead, o.WorkerLimit, o.Controller.SetCeiling, o.Controller.Tolerate, o.Controller.EndTolerance)
	p.up.open = make(map[*upgraded]struct{})
	p.up.perEp = make(map[*endpoint]int)
	return p, nil
}

func (p *Proxy) getBuf() *[]byte { return p.bufs.Get().(*[]byte) }

// dropBuf gives back a response buffer and the memory reserved for it.
func (p *Proxy) dropBuf(b *[]byte) {
	p.bufs.Put(b)
	p.mem.release(bufSize)
}

// Add starts routing to e. It never blocks. A Concurrency below 1 counts
// as 1; an ID already known is ignored (and logged).
func (p *Proxy) Add(e supervisor.Endpoint) {
	e.Concurrency = max(e.Concurrency, 1)
	ep := &endpoint{
		Endpoint: e,
		host:     "worker-" + strconv.Itoa(e.ID),
		client:   p.newClient(e),
		added:    time.Now(),
	}
	// The meter feeds an adaptive worker's limit and any worker's
	// lookahead (see ContentionMeter).
	if e.Adaptive || p.o.Lookahead > 0 {
		if m := p.o.WorkerDemand(e); m != nil {
			window := p.o.WorkerLimit.Window
			if window == 0 {
				window = limit.WorkerWindow
			}
			ep.demand = newDemandFeed(m, window, ep.added)
		}
	}
	if !p.pool.add(ep) {
		p.log.Warn("proxy: endpoint added twice; ignored", slog.Int("worker", e.ID))
		return
	}
	p.log.Info("proxy: endpoint added", slog.Int("worker", e.ID), slog.String("addr", e.Addr),
		slog.Int("concurrency", e.Concurrency))
}

// Drain stops routing new requests to id and returns once none is in
// flight on it, including requests whose client has gone or was answered
// 504 and whose render is still running; or with ctx.Err() when ctx is done
// first; or at once when id is unknown or removed meanwhile.
func (p *Proxy) Drain(ctx context.Context, id int) error {
	return p.pool.drain(ctx, id)
}

// Remove forgets id at once: no new request goes to it, and its idle
// connections are closed. Requests in flight on it fail on their own.
func (p *Proxy) Remove(id int) {
	if e := p.pool.remove(id); e != nil {
		e.client.CloseIdle()
		p.log.Info("proxy: endpoint removed", slog.Int("worker", id))
	}
}

// Ready reports whether at least one worker is routable: a readiness probe
// should fail while it is false, since every request would get 503.
func (p *Proxy) Ready() bool { return p.pool.ready() }

// CloseIdleConnections closes the idle keep-alive connections to every
// worker, and ends the idle goroutines kept for the next requests (which
// end by themselves after a few seconds without work). Requests in flight
// are not interrupted.
func (p *Proxy) CloseIdleConnections() {
	for _, e := range p.pool.endpoints() {
		e.client.CloseIdle()
	}
	p.runs.closeIdle()
}

func (p *Proxy) newClient(e supervisor.Endpoint) *upstream.Client {
	idle := p.o.MaxIdleConnsPerWorker
	if idle == 0 {
		// Concurrency and the lookahead are the most requests the worker
		// is ever given at once (an adaptive worker's ceiling): one
		// connection each stays open.
		idle = e.Concurrency + p.o.Lookahead
	}
	cl, err := upstream.New(upstream.Options{
		Network:     e.Network,
		Addr:        e.Addr,
		Dial:        p.o.Dial,
		DialTimeout: p.o.DialTimeout,
		MaxIdle:     idle,
		IdleTimeout: p.o.IdleConnTimeout,
		Unsolicited: func() { p.noteUnsolicited(e) },
	})
	if err != nil {
		panic(err) // Options.Validate refused what upstream.New refuses
	}
	return cl
}

// noteUnsolicited counts a worker's bytes outside any response (see
// the upstream package's doc) and logs it, at most once a second.
func (p *Proxy) noteUnsolicited(e supervisor.Endpoint) {
	n := p.unsolicited.Add(1)
	now := time.Now().UnixNano()
	last := p.unsolicitedLog.Load()
	if now-last < int64(time.Second) || !p.unsolicitedLog.CompareAndSwap(last, now) {
		return
	}
	p.log.Warn("proxy: worker sent bytes outside any response (past its Content-Length, or while idle); connection closed, its connections no longer reused",
		slog.Int("worker", e.ID), slog.String("addr", e.Addr), slog.Uint64("total", n))
}

// ServeHTTP reads the body, waits for admission, and forwards the request
// to an idle worker slot.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	r, ok := screen(w, r, p.o.MaxHeaderFields)
	if !ok {
		return
	}
	if isUpgrade(r) {
		// Neither admitted nor given a slot: see upgrade.go.
		p.serveUpgrade(w, r)
		return
	}
	shape, ok := p.admitShape(w, r)
	if !ok {
		return
	}
	defer shape.finish(poison.NotSent) // unless an exchange that reached its worker did first
	var req admission.Request
	if p.o.Classify != nil {
		req = p.o.Classify(r)
	}
	body, err := p.readBody(w, r)
	if err != nil {
		p.bodyError(w, r, err)
		return
	}
	defer body.release()
	info := reqinfo.From(r.Context()) // nil unless the caller reports requests
	if info != nil {
		info.Queued = time.Now()
	}
	req.Untimed = true // the exchange times itself: DoneSample or Release
	permit, err := p.c.Acquire(r.Context(), req)
	if info != nil {
		info.QueueWait = time.Since(info.Queued)
	}
	if err != nil {
		if reason, ok := admission.ShedReason(err); ok {
			if info != nil {
				info.Shed = reason.String()
			}
			p.shed(w, r, reason, err)
		} else {
			p.neverDispatched.Add(1) // the client left while queued
		}
		return
	}
	p.forward(w, r, req, body, permit, shape)
}

func (p *Proxy) bodyError(w http.ResponseWriter, r *http.Request, err error) {
	var mbe *http.MaxBytesError
	switch {
	case errors.Is(err, errTooLarge) || errors.As(err, &mbe):
		p.tooLarge.Add(1)
		w.Header().Set("Connection", "close")
		plain(w, http.StatusRequestEntityTooLarge, "Request Entity Too Large\n")
	case errors.Is(err, errNoMemory):
		p.bodyRefused.Add(1)
		h := w.Header()
		h.Set("Connection", "close")
		h.Set("Retry-After", "1")
		plain(w, http.StatusServiceUnavailable, "Service Unavailable: too many uploads in progress\n")
	case errors.Is(err, os.ErrDeadlineExceeded):
		p.bodyTimeouts.Add(1)
		w.Header().Set("Connection", "close")
		plain(w, http.StatusRequestTimeout, "Request Timeout\n")
	case r.Context().Err() != nil, errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed):
		// The client hung up: nobody to answer.
	default:
		w.Header().Set("Connection", "close")
		plain(w, http.StatusBadRequest, "Bad Request\n")
	}
}

// forward dispatches the admitted request, sending it to another worker
// when its worker failed before any byte of it was written (a refused
// dial, say), never once the request reached a worker (upstream.Call.Sent). It
// gives back permit, or hands it to the exchange that keeps the slot.
func (p *Proxy) forward(w http.ResponseWriter, r *http.Request, req admission.Request, b *body, permit admission.Permit, shape *shapeTicket) {
	ctx := r.Context()
	var trust Trust
	if p.o.Trust != nil {
		trust = p.o.Trust(r)
	}
	hdr := outgoingHeader(r, req, trust, p.o.UnderscoresInHeaders)
	info := reqinfo.From(ctx)
	if info != nil {
		info.SetRequestHeaders(hdr) // the request's ID and arrival, not the client's
	}
	var triedBuf [4]int
	tried := triedBuf[:0]
	var lastErr error
	for attempt := 0; ; attempt++ {
		ep, budget, ok := p.takeSlot(w, r, req, permit, tried, lastErr)
		if !ok {
			return
		}
		if attempt > 0 {
			hdr = hdr.Clone() // the last attempt's transport may still read the old one
		}
		setBudget(hdr, budget)
		x := p.dispatch(r, ep, hdr, b, permit, budget)
		p.hold(x, shape)
		o := x.serve(ctx, w, budget)
		if info != nil {
			info.Worker, info.Dispatched, info.WorkerTime = ep.ID, x.start, time.Since(x.start)
		}
		switch o {
		case outcomeRelay:
			p.relay(w, r, x)
			return
		case outcomeTimeout:
			p.timeout(w, r)
			return
		case outcomeGone:
			return
		}
		lastErr = x.err
		tried = append(tried, ep.ID)
		if !p.mayRetry(w, r, ep, x, permit) {
			return
		}
	}
}

// takeSlot returns a worker outside tried with a slot taken for the next
// attempt at r, and the attempt's budget (negative: none). When it cannot,
// it gives back permit, answers the client (unless it has gone: the
// budget spent, no worker, or lastErr, the failure of the last worker
// tried) and returns false. Every attempt may wait for a slot within the
// budget: a retry must not fail only because the other workers are busy.
func (p *Proxy) takeSlot(w http.ResponseWriter, r *http.Request, req admission.Request, permit admission.Permit, tried []int, lastErr error) (*endpoint, time.Duration, bool) {
	ctx := r.Context()
	if ctx.Err() != nil {
		permit.Release()
		p.neverDispatched.Add(1)
		return nil, 0, false
	}
	now := time.Now()
	budget := p.o.Timeout // negative: none
	if !req.Deadline.IsZero() {
		if budget = req.Deadline.Sub(now); budget <= 0 {
			permit.Release()
			p.timeout(w, r)
			return nil, 0, false
		}
	}
	ep, err := p.pool.take(ctx, now, tried, budget)
	if err != nil {
		permit.Release()
		switch {
		case ctx.Err() != nil:
			p.neverDispatched.Add(1)
		case len(tried) > 0:
			p.fail(w, r, lastErr)
		default:
			p.noWorkerError(w, r)
		}
		return nil, 0, false
	}
	if ctx.Err() != nil {
		p.pool.release(ep)
		permit.Release()
		p.neverDispatched.Add(1)
		return nil, 0, false
	}
	return ep, budget, true
}

// mayRetry reports whether the request x failed on at ep may go to
// another worker: only when none of it was written to ep. Otherwise it
// gives back permit, answers the client with the failure and returns
// false.
func (p *Proxy) mayRetry(w http.ResponseWriter, r *http.Request, ep *endpoint, x *exchange, permit admission.Permit) bool {
	dialErr := isDialError(x.err)
	if dialErr {
		p.pool.unreachable(ep, time.Now())
	}
	if x.call.Sent() {
		// The worker may have acted on it, or died of it: never a
		// second worker (see the package doc, Failures).
		permit.Release()
		p.fail(w, r, x.err)
		return false
	}
	if dialErr {
		p.log.Warn("proxy: worker unreachable; trying another", slog.Int("worker", ep.ID), slog.Any("error", x.err))
	} else {
		p.retries.Add(1)
		p.log.Warn("proxy: request not written to its worker; trying another", slog.Int("worker", ep.ID),
			slog.String("path", r.URL.Path), slog.Any("error", x.err))
	}
	return true
}

// dispatch makes the exchange of one attempt on ep, whose slot is taken;
// serve runs it. The outgoing request lives in the exchange: one
// allocation for both.
func (p *Proxy) dispatch(r *http.Request, ep *endpoint, hdr http.Header, b *body, permit admission.Permit, budget time.Duration) *exchange {
	hangAfter := time.Duration(-1)
	if budget >= 0 && p.o.HangGrace >= 0 {
		hangAfter = budget + p.o.HangGrace
	}
	x := &exchange{
		p:         p,
		ep:        ep,
		in:        r,
		permit:    permit,
		start:     time.Now(),
		hangAfter: hangAfter,
		limit:     int(min(p.o.BufferResponseBytes, 1<<40)),
		notify:    make(chan struct{}, 1),
		space:     make(chan struct{}, 1),
	}
	x.url = url.URL{
		Scheme:   "http",
		Host:     ep.host,
		Path:     r.URL.Path,
		RawPath:  r.URL.RawPath,
		RawQuery: r.URL.RawQuery,
	}
	x.out = http.Request{
		Method:     r.Method,
		URL:        &x.url,
		Proto:      "HTTP/1.1",
		ProtoMajor: 1,
		ProtoMinor: 1,
		Header:     hdr,
		Host:       r.Host,
		Body:       http.NoBody,
	}
	x.req = &x.out
	x.call.Info = x
	if b != nil && b.n > 0 {
		x.body = b
		b.retain() // released by the exchange's finish
		x.out.ContentLength = b.n
		x.out.Body = b.reader()
		x.out.GetBody = func() (io.ReadCloser, error) { return b.reader(), nil }
	}
	return x
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// shed answers a request the Controller refused.
func (p *Proxy) shed(w http.ResponseWriter, r *http.Request, reason admission.Reason, err error) {
	// A tenant over its quota is told so (429), not served the fallback
	// that stands in for an overloaded service.
	if reason != admission.ReasonQuota && p.fallback(w, r, "shed", func(h http.Header) { h.Set(admission.HeaderShed, reason.String()) }) {
		return
	}
	admission.WriteShed(w, reason, p.c.RetryAfterFor(err))
}

func (p *Proxy) noWorkerError(w http.ResponseWriter, r *http.Request) {
	p.noWorker.Add(1)
	if p.fallback(w, r, "no-worker", nil) {
		return
	}
	w.Header().Set("Retry-After", "1")
	plain(w, http.StatusServiceUnavailable, "No Worker Available\n")
}

func (p *Proxy) timeout(w http.ResponseWriter, r *http.Request) {
	p.gatewayTimeout.Add(1)
	if p.fallback(w, r, "timeout", nil) {
		return
	}
	plain(w, http.StatusGatewayTimeout, "Gateway Timeout\n")
}

func (p *Proxy) fail(w http.ResponseWriter, r *http.Request, err error) {
	p.badGateway.Add(1)
	p.log.Warn("proxy: bad gateway", slog.String("path", r.URL.Path), slog.Any("error", err))
	if p.fallback(w, r, "bad-gateway", nil) {
		return
	}
	plain(w, http.StatusBadGateway, "Bad Gateway\n")
}

// fallback writes r's Fallback, if it has one, in place of the error kind.
func (p *Proxy) fallback(w http.ResponseWriter, r *http.Request, kind string, decorate func(http.Header)) bool {
	if p.o.SelectFallback == nil {
		return false
	}
	f := p.o.SelectFallback(r)
	if f == nil {
		return false
	}
	p.serveFallback(w, r, f, kind, decorate)
	return true
}

// serveFallback writes f in place of the error kind.
func (p *Proxy) serveFallback(w http.ResponseWriter, r *http.Request, f *Fallback, kind string, decorate func(http.Header)) {
	p.fallbacks.Add(1)
	body := f.body(r)
	h := w.Header()
	ct := f.ContentType
	if ct == "" {
		ct = "text/html; charset=utf-8"
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	h.Set(HeaderFallback, kind)
	if decorate != nil {
		decorate(h)
	}
	status := f.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func plain(w http.ResponseWriter, code int, body string) {
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, body)
}
