package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/poison"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/upstream"
	"github.com/sluicehq/sluice/limit"
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultTimeout             = 30 * time.Second
	DefaultHangGrace           = 10 * time.Second
	DefaultMaxBodyBytes        = 10 << 20
	DefaultBufferResponseBytes = 1 << 20
	DefaultDialTimeout         = upstream.DefaultDialTimeout
	// DefaultMaxHeaderFields is Apache httpd's LimitRequestFields: a
	// browser sends 10 to 20, a CDN adds about as many.
	DefaultMaxHeaderFields = 100
	// DefaultQuarantine is how long a worker that refused a connection is
	// passed over (see the package doc).
	DefaultQuarantine = time.Second
	// DefaultLookahead is Options.Lookahead's default: one request waits
	// in a busy worker, enough to cover the round trip through the front.
	DefaultLookahead = 1
	// MaxLookahead bounds Options.Lookahead.
	MaxLookahead = 8
	// DefaultIdleConnTimeout is upstream.DefaultIdleTimeout, shorter than
	// Node.js's 5 s keepAliveTimeout.
	DefaultIdleConnTimeout = upstream.DefaultIdleTimeout
)

// Options configure a Proxy. Only Controller is required; New replaces the
// zero value of every other field with the default its comment gives.
// Options is a plain value: New copies it.
type Options struct {
	// Controller is the one central queue: every request is admitted by it
	// before it is dispatched. Its algorithm stays its own (a fixed cap on
	// requests in flight, say); the Proxy sets its ceiling to the worker
	// slots (see Controller.SetCeiling). Required.
	Controller *admission.Controller

	// WorkerLimit tunes the per-worker limit of adaptive endpoints
	// (supervisor.Endpoint.Adaptive).
	WorkerLimit WorkerLimit

	// WorkerDemand gives the meter of a worker's CPU demand (nil: none),
	// read once a WorkerLimit.Window. While an adaptive worker reports no
	// saturation itself, the demand is taken as its report: a worker that
	// says nothing is then judged as one that does, by how busy its event
	// loop is, not only by its throughput and latency. A ContentionMeter's
	// contention decides any worker's lookahead (see Lookahead). nil means
	// KernelDemand; NoDemand turns it off.
	WorkerDemand func(supervisor.Endpoint) DemandMeter

	// Classify maps a request to its admission Request (priority, tenant,
	// cost, deadline). nil treats every request alike: Critical, cost 1,
	// no deadline. A Deadline, when set, replaces Timeout as the request's
	// budget. Cost is the Controller's business: a request takes one
	// worker slot whatever its cost.
	Classify func(*http.Request) admission.Request

	// Trust says what is believed of r's peer (see Trust): which Sluice-*
	// and forwarding headers reach the worker. nil believes nobody: every
	// Sluice-* header and the forwarding headers (Forwarded, X-Real-IP,
	// CF-Connecting-IP, ...) are removed and X-Forwarded-For is the peer's
	// address alone.
	Trust func(r *http.Request) Trust

	// UnderscoresInHeaders passes request headers whose names have an
	// underscore on to the workers, but those that read as a header sluice
	// strips, sets or frames by with "_" for "-" (X_Forwarded_For,
	// Sluice_Priority, Transfer_Encoding). False drops every such name, as
	// nginx does by default (underscores_in_headers off): many workers read
	// "_" and "-" alike (see dropUnderscore).
	UnderscoresInHeaders bool

	// MaxHeaderFields bounds a request's header fields (a repeated name
	// counts once per field); a request with more is answered 431 without
	// taking a slot. Node.js drops, unannounced, the fields past its own
	// 2,000. Zero means DefaultMaxHeaderFields; negative means no bound.
	MaxHeaderFields int

	// Timeout is how long a worker has, from dispatch, to answer (response
	// headers, and the whole body when it is buffered) before the client
	// gets 504 or its Fallback. The slot stays taken until the worker does
	// answer. Zero means DefaultTimeout; negative means no limit.
	Timeout time.Duration

	// HangGrace is how long past the request's budget a worker may stay
	// silent (no headers, or no body bytes for that long) before it is
	// considered hung: its connection is closed, the slot freed, and the
	// event logged and counted. A streamed response's silence is bounded
	// by StreamIdleTimeout instead. Zero means DefaultHangGrace; negative
	// means never (a hung worker keeps its slot until it is removed).
	HangGrace time.Duration

	// MaxBodyBytes bounds a request body; a larger one is answered 413
	// without taking a slot. Zero means DefaultMaxBodyBytes; negative
	// means no bound of its own: MaxBufferedBytes bounds it.
	MaxBodyBytes int64

	// MaxBufferedBytes bounds the memory held by all buffered bodies at
	// once, request bodies being read and responses waiting for their
	// clients. Memory is reserved as bytes arrive, never for a declared
	// Content-Length. A request body that would not fit now is answered
	// 503 (Retry-After: 1, the connection closed) and one that could never
	// fit 413; requests without a body are not affected. A response that
	// would not fit is relayed as a stream instead, the worker waiting for
	// the client; each response in flight may still hold one 32 KiB read
	// buffer beyond the bound. Zero means DefaultMaxBufferedBytes();
	// negative is invalid.
	MaxBufferedBytes int64

	// BufferResponseBytes is how much of a response may wait in memory for
	// a slow client. A response whose Content-Length is at most this is
	// read whole before the client sees any of it (a worker failing midway
	// is then a clean 502, or a retry). Larger ones, those without a
	// length (chunked) and text/event-stream are relayed as they arrive,
	// with a flush after each read. Either way the slot is freed as soon as
	// the worker has finished sending, unless the client is more than this
	// far behind; the worker then waits for the client, as it would
	// without a proxy. Zero means DefaultBufferResponseBytes; negative
	// means no buffering.
	BufferResponseBytes int64

	// OnHung, when set, is told the ID of a worker found hung before it
	// answered (no response headers for the request's budget plus
	// HangGrace while holding a slot: an endless loop), once per worker,
	// from the goroutine that found it; it must not block. (A worker
	// silent in the middle of a response body only has that connection
	// closed: a quiet stream is not a hung worker.) The
	// worker takes no new request from then on, as if draining, and its
	// slot is not given again: the callee is expected to replace it (in
	// sluice, supervisor.Supervisor.Kill) and Remove follows. nil means
	// nobody will: the worker stays routable and its freed slot is used
	// again, as for an upstream sluice does not start.
	OnHung func(id int)

	// Poison, when set, remembers the request shapes in flight when a
	// worker died (the Proxy is a supervisor.Witness) and refuses those it
	// quarantines, before admission: 503 with Sluice-Shed: poison
	// (ShedPoison), or the route's fallback for a shed. nil means no
	// request is refused for its shape, and every worker death counts
	// toward the supervisor's crash-loop guard.
	Poison *poison.Table

	// SlowStart: among idle workers, those added less than SlowStart ago
	// (cold: no JIT, empty caches) get a request only when every warm one
	// is busy. Zero means no preference.
	SlowStart time.Duration

	// Fallbacks are responses served instead of shed, no-worker and timeout
	// errors, such as a client-side-render shell. The one with the longest
	// matching PathPrefix applies; SelectFallback replaces this choice.
	Fallbacks []Fallback
	// SelectFallback chooses the fallback for r, nil for none. nil means
	// the longest matching PathPrefix in Fallbacks.
	SelectFallback func(r *http.Request) *Fallback

	// MaxUpgrades bounds the upgraded connections (WebSocket and other
	// protocol switches) open at once; past it an upgrade request is
	// answered 503. They take no worker slot (see upgrade.go). Zero means
	// DefaultMaxUpgrades; negative is invalid.
	MaxUpgrades int

	// Lookahead is how many requests a worker at its limit may hold
	// beyond it, waiting in the worker for a render to end. Between one
	// response and the next request a worker at its limit idles for a
	// round trip through the front: the response read, the slot handed
	// to the next waiter, its request written. That is 0.2 to 3 ms on a
	// busy machine, 2 to 20% of a single-threaded renderer whose renders
	// take 15 ms, which a request already in the worker's socket removes:
	// it is read the instant the render ends. The proxy gives a worker a
	// lookahead request only when every worker is at its limit (an idle
	// worker is always picked first), to the worker picked least recently,
	// whose render is the most advanced. Each costs one render of extra
	// wait for that request, and it cannot go to another worker that frees
	// first. A worker whose WorkerDemand meter finds its CPU contended
	// (a ContentionMeter; see pool.go) has none meanwhile: another
	// process fills its gap. Nor has a worker whose requests take 100 ms
	// or more: the gap is then under 3% of a render, and the request
	// ahead waits a whole one. Zero means DefaultLookahead; negative means
	// none: a request goes only to a worker below its limit.
	Lookahead int
	// StreamIdleTimeout bounds the silence of a worker's streamed response
	// (see streams.go): past it the worker's connection is closed and the
	// client's cut. It replaces HangGrace's rule once the response is a
	// stream. Zero means DefaultStreamIdleTimeout; negative means none.
	StreamIdleTimeout time.Duration
	// StreamTimeout bounds a streamed response's whole life, from its
	// header, likewise. Zero means DefaultStreamTimeout; negative means
	// none.
	StreamTimeout time.Duration
	// SelectStreamBounds, when set, gives r's own stream bounds (its
	// route's); a zero field keeps StreamIdleTimeout's or StreamTimeout's.
	SelectStreamBounds func(r *http.Request) StreamBounds
	// StreamHold is how long a streamed response other than an event
	// stream may hold its render slot before it counts as one of the
	// streams instead (an event stream never holds one). Zero means
	// DefaultStreamHold; negative means it holds its slot to the end.
	StreamHold time.Duration
	// MaxStreams bounds the streams that hold no render slot; past it an
	// event stream is answered 503 and another stream keeps its slot. Zero
	// means DefaultMaxStreams; negative is invalid.
	MaxStreams int

	// DialTimeout bounds connecting to a worker. Zero means
	// DefaultDialTimeout.
	DialTimeout time.Duration
	// IdleConnTimeout is how long a keep-alive connection to a worker may
	// sit unused. Zero means DefaultIdleConnTimeout.
	IdleConnTimeout time.Duration
	// MaxIdleConnsPerWorker bounds the idle keep-alive connections kept per
	// worker. Zero means the worker's Concurrency.
	MaxIdleConnsPerWorker int
	// Dial connects to a worker ("tcp" or "unix"). nil means a net.Dialer
	// with DialTimeout. Tests use it for an in-memory network.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// Logger receives hung workers, failed requests and endpoint changes.
	// nil means no logging.
	Logger *slog.Logger
}

// Fallback is a fixed response served instead of a shed, no-worker,
// timeout or bad-gateway error (and, opt-in, a worker's 5xx): for server-side rendering, a client-side-render shell,
// as Hypernova's callers served when a render failed.
type Fallback struct {
	// PathPrefix selects the requests it applies to ("/" for all).
	PathPrefix string
	// Status is the response status; zero means 200.
	Status int
	// ContentType is the Content-Type; empty means
	// "text/html; charset=utf-8".
	ContentType string
	// Body is the response body.
	Body []byte
	// OnWorkerError serves the fallback in place of a worker's 5xx too
	// (the worker's response is discarded). Only a response buffered whole
	// can be replaced: one relayed as a stream (larger than
	// BufferResponseBytes, chunked, or an event stream) has reached the
	// client already and is relayed as it is.
	OnWorkerError bool
	// Props names where the request carries the props of the page it asks
	// for, "query:NAME" or "header:NAME"; "" for nowhere. Each
	// PropsPlaceholder in Body is then replaced by that value as a
	// JavaScript string literal safe inside a <script> element (null when
	// the request has none): a client-side-render shell can JSON.parse it
	// and render what the server could not (see fallbackprops.go).
	Props string
}

// Validate reports every invalid field of o, one error each (errors.Join),
// naming the field and what it allows; nil means New accepts o. Every
// field's zero value is valid but Controller's, which has no default: the
// Proxy admits through the caller's queue.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("proxy: "+format, args...)) }
	if o.Controller == nil {
		bad("Options.Controller is required")
	}
	for i, f := range o.Fallbacks {
		if !strings.HasPrefix(f.PathPrefix, "/") {
			bad("Fallbacks[%d].PathPrefix %q must start with /", i, f.PathPrefix)
		}
		if f.Status != 0 && (f.Status < 200 || f.Status > 599) {
			bad("Fallbacks[%d].Status %d is outside 200..599 (0 means 200)", i, f.Status)
		}
		if err := ValidateProps(f.Props); err != nil {
			bad("Fallbacks[%d].Props: %w", i, err)
		}
	}
	if o.MaxBufferedBytes < 0 {
		bad("MaxBufferedBytes %d is negative (0 means the default)", o.MaxBufferedBytes)
	}
	if o.MaxUpgrades < 0 {
		bad("MaxUpgrades %d is negative (0 means the default)", o.MaxUpgrades)
	}
	if o.Lookahead > MaxLookahead {
		bad("Lookahead %d is above %d: requests waiting inside a worker cannot go to another that frees first", o.Lookahead, MaxLookahead)
	}
	if o.MaxStreams < 0 {
		bad("MaxStreams %d is negative (0 means the default)", o.MaxStreams)
	}
	if o.MaxIdleConnsPerWorker < 0 {
		bad("MaxIdleConnsPerWorker %d is negative (0 means the worker's concurrency)", o.MaxIdleConnsPerWorker)
	}
	wl := limit.WorkerOptions{MaxSaturation: o.WorkerLimit.MaxSaturation, Window: o.WorkerLimit.Window}
	if err, ok := wl.Validate().(interface{ Unwrap() []error }); ok {
		for _, e := range err.Unwrap() {
			bad("WorkerLimit: %w", e)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"DialTimeout", o.DialTimeout}, {"IdleConnTimeout", o.IdleConnTimeout}, {"SlowStart", o.SlowStart}} {
		if d.v < 0 {
			bad("%s %v is negative (0 means the default)", d.name, d.v)
		}
	}
	return errors.Join(errs...)
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.WorkerDemand == nil {
		o.WorkerDemand = KernelDemand
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	if o.HangGrace == 0 {
		o.HangGrace = DefaultHangGrace
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.BufferResponseBytes == 0 {
		o.BufferResponseBytes = DefaultBufferResponseBytes
	}
	if o.MaxBufferedBytes == 0 {
		o.MaxBufferedBytes = DefaultMaxBufferedBytes()
	}
	if o.BufferResponseBytes < 0 {
		o.BufferResponseBytes = 0
	}
	if o.MaxUpgrades == 0 {
		o.MaxUpgrades = DefaultMaxUpgrades
	}
	switch {
	case o.Lookahead == 0:
		o.Lookahead = DefaultLookahead
	case o.Lookahead < 0:
		o.Lookahead = 0
	}
	if o.MaxHeaderFields == 0 {
		o.MaxHeaderFields = DefaultMaxHeaderFields
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = DefaultDialTimeout
	}
	if o.StreamIdleTimeout == 0 {
		o.StreamIdleTimeout = DefaultStreamIdleTimeout
	}
	if o.StreamTimeout == 0 {
		o.StreamTimeout = DefaultStreamTimeout
	}
	if o.StreamHold == 0 {
		o.StreamHold = DefaultStreamHold
	}
	if o.StreamHold < 0 {
		o.StreamHold = 1<<63 - 1
	}
	if o.MaxStreams == 0 {
		o.MaxStreams = DefaultMaxStreams
	}
	if o.IdleConnTimeout == 0 {
		o.IdleConnTimeout = DefaultIdleConnTimeout
	}
	if o.Dial == nil {
		d := &net.Dialer{Timeout: o.DialTimeout}
		o.Dial = d.DialContext
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SelectFallback == nil && len(o.Fallbacks) > 0 {
		fbs := make([]Fallback, len(o.Fallbacks))
		copy(fbs, o.Fallbacks)
		o.SelectFallback = func(r *http.Request) *Fallback { return longestPrefix(fbs, r.URL.Path) }
	}
	return o
}

// longestPrefix returns the fallback whose PathPrefix is the longest prefix
// of path, nil when none is. Prefixes match as routes do
// (admission.MatchPathPrefix: the cleaned path, any case), so a request a
// route classifies gets that route's fallback.
func longestPrefix(fbs []Fallback, path string) *Fallback {
	var best *Fallback
	path = admission.CleanPath(path)
	for i := range fbs {
		f := &fbs[i]
		if hasPrefixFold(path, f.PathPrefix) && (best == nil || len(f.PathPrefix) > len(best.PathPrefix)) {
			best = f
		}
	}
	return best
}
