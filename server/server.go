// Package server runs an http.Handler in production: per-phase timeouts that
// hold for HTTP/1.1 and HTTP/2, liveness and readiness answered before the
// handler, a connection limit, and a drain that loses no request when the
// process is replaced (a rolling deploy, a scale-in).
//
// # Timeouts, in net/http terms
//
// A connection goes through phases, and each has its own bound; none of them
// limits how long a handler may take to write its response, so streamed
// responses (server-sent events, slow streamed rendering) live as long as
// they keep going.
//
//   - KeepAliveTimeout is http.Server.IdleTimeout: how long a connection may
//     sit between requests. Over HTTP/2 it is how long a connection may have
//     no open stream; the server then sends GOAWAY and closes it.
//   - HeadersTimeout is http.Server.ReadHeaderTimeout, capped by
//     RequestTimeout: from the first byte of a request to the end of its
//     headers. A client that stalls in the middle of its headers is
//     disconnected without an answer (Go writes no 408 there). Over HTTP/2 a
//     stream does not exist until its header block is complete, so a stalled
//     header block leaves the connection with no open stream and
//     KeepAliveTimeout closes it; the TLS handshake, for both protocols, must
//     finish within the shorter of HeadersTimeout and RequestTimeout.
//   - RequestTimeout is http.Server.ReadTimeout: reading the whole request,
//     headers and body. A handler reading the body past it gets an error that
//     wraps os.ErrDeadlineExceeded (answering 408 is the handler's call).
//     Over HTTP/2 it runs per stream, from the stream's headers. It ends with
//     the body: net/http clears the read deadline when the body has been read,
//     so neither the response nor the request's context (cancelled when the
//     client goes away) is bound by it.
//   - There is no WriteTimeout: net/http's is a bound on the whole response
//     (from the end of the request's headers), which would cut every
//     long-lived stream, as a single inactivity timer over the whole
//     exchange does too.
//     SendTimeout bounds progress instead: each write of the response (and
//     the last flush, after the handler returns) must be taken by the
//     client within it, so a client that keeps its connection but stops
//     reading is cut (HTTP/1.1: the connection is closed; HTTP/2: the
//     stream is reset, and the whole connection closed when nothing at all
//     can be written to it for that long), while a stream that pauses
//     between writes lives on. The handler's Write then returns an error.
//     A connection whose last response ended more than SendTimeout ago
//     cannot carry net/http's own error answers (400, 431) to its next
//     request: it is closed instead.
//
// # Probes
//
// HealthPath and ReadyPath are answered before Handler, for GET and HEAD,
// whatever Handler is doing: a saturated handler (or an admission queue in
// front of it) never delays or sheds a probe, and neither does the
// connection limit (see MaxConnections). Liveness is 200 "ok" while the
// process can serve at all, draining included; readiness is 200 "ready" only
// while the server accepts work, and 503 "not ready" while Ready reports
// false and from the first instant of a drain.
//
// # Memory per connection
//
// In net/http an open connection costs about 17 KiB even while it waits
// for its client: a goroutine whose stack has grown serving requests, and
// 4 KiB read and write buffers. Above ParkAbove open connections, those
// that wait (new ones before their first bytes, plain HTTP/1.1 keep-alive
// ones idle for a second) wait outside net/http instead, for about 3 KiB
// each: 10,000 parked keep-alive connections take some 30 MiB, not 170.
//
// # Drain
//
// Serve and Run drain when their context is cancelled; see Server.Serve for
// the order. Signals turns SIGTERM and SIGINT into that: the first signal
// drains, the second cuts.
package server

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for the zero values of Server's fields. 65 s of keep-alive outlasts the 60 s idle timeout of an AWS load
// balancer (so the balancer, not the server, closes idle connections and
// never sends a request down a connection the server is closing), and a 25 s
// shutdown fits Kubernetes' default 30 s termination grace period.
const (
	DefaultAddr             = ":3000"
	DefaultKeepAliveTimeout = 65 * time.Second
	DefaultHeadersTimeout   = 66 * time.Second
	DefaultRequestTimeout   = 30 * time.Second
	DefaultShutdownTimeout  = 25 * time.Second
	DefaultDrainDelay       = 5 * time.Second
	DefaultMaxHeaderBytes   = 64 << 10
	DefaultMaxConnections   = 10000
	DefaultProbeConnections = 64
	// DefaultSendTimeout is nginx's send_timeout.
	DefaultSendTimeout          = 60 * time.Second
	DefaultMaxConcurrentStreams = 100
	// DefaultParkAbove: below it, connections waiting in net/http hold
	// at most about 17 MiB, not worth the CPU a request pays when it
	// finds its connection parked.
	DefaultParkAbove  = 1000
	DefaultHealthPath = "/__sluice/health"
	DefaultReadyPath  = "/__sluice/ready"

	// defaultParkGrace is how long an idle keep-alive connection stays
	// in net/http before it is parked: far longer than the pause between
	// a busy client's requests, which therefore never pay for the move.
	defaultParkGrace = time.Second
)

// ErrCut is wrapped by the error Serve and Run return when the drain did not
// finish: ShutdownTimeout passed, or Cut was called, while connections were
// still open. Those connections were closed under their requests.
var ErrCut = errors.New("server: drain cut short")

// Server runs a Handler on one listener. Its zero value serves 404s on
// DefaultAddr with the default timeouts; set the fields before calling Run
// or Serve and do not change them afterwards. A Server runs once: Run and
// Serve return an error when called a second time. Cut and Conns are safe
// for concurrent use; do not copy a Server after first use.
type Server struct {
	// Addr is the TCP address Run listens on. Empty means DefaultAddr.
	Addr string

	// Handler serves every request but the probes. Nil means one that
	// answers 404 to everything.
	Handler http.Handler

	// TLSConfig, or CertFile and KeyFile (PEM files, read when serving
	// starts), switch the server to HTTPS. HTTPS offers HTTP/2 and HTTP/1.1
	// through ALPN; a client without ALPN gets HTTP/1.1. TLSConfig is cloned,
	// not modified. When all three are zero the server speaks plain HTTP.
	TLSConfig *tls.Config
	CertFile  string
	KeyFile   string

	// H2C accepts HTTP/2 without TLS ("prior knowledge": the connection
	// starts with the HTTP/2 preface, as gRPC clients and proxies such as
	// Envoy send it) beside HTTP/1.1 on the same port. It uses net/http's own
	// support (http.Protocols.SetUnencryptedHTTP2), not golang.org/x/net's
	// h2c handler, whose hijacked connections escape http.Server.Shutdown:
	// they get no GOAWAY and are not waited for. The HTTP/1.1 Upgrade: h2c
	// dance is not supported (RFC 9113 deprecated it). Ignored with TLS.
	H2C bool

	// KeepAliveTimeout bounds the wait for the next request on an idle
	// connection (HTTP/2: a connection with no open stream). Zero means
	// DefaultKeepAliveTimeout; negative means no bound.
	KeepAliveTimeout time.Duration

	// HeadersTimeout bounds reading a request's headers, from their first
	// byte. The effective bound is the shorter of HeadersTimeout and
	// RequestTimeout, since headers are part of the request. Zero means
	// DefaultHeadersTimeout; negative means no bound of its own.
	HeadersTimeout time.Duration

	// RequestTimeout bounds reading a whole request, headers and body; it
	// never bounds the response. Zero means DefaultRequestTimeout; negative
	// means no bound.
	RequestTimeout time.Duration

	// ShutdownTimeout bounds the drain, measured from the moment Serve sees
	// its context done (the signal): whatever is still open then is cut.
	// DrainDelay counts against it. Zero means DefaultShutdownTimeout;
	// negative means no bound (only Cut ends a drain early).
	ShutdownTimeout time.Duration

	// DrainDelay is how long a draining server keeps accepting and serving
	// new requests after readiness has turned 503, so that load balancers
	// notice before the listener closes. Zero means DefaultDrainDelay;
	// negative means none.
	DrainDelay time.Duration

	// MaxHeaderBytes bounds the size of a request's headers, request line
	// included; a bigger request gets 431 Request Header Fields Too Large.
	// Go allows 4 KiB of slack and advertises the bound to HTTP/2 clients
	// (SETTINGS_MAX_HEADER_LIST_SIZE); over HTTP/2 a single header field
	// bigger than the bound is an HPACK error that ends the connection.
	// Zero means
	// DefaultMaxHeaderBytes; negative means Go's http.DefaultMaxHeaderBytes
	// (1 MiB).
	MaxHeaderBytes int

	// MaxConnections bounds the open client connections. A connection
	// accepted while MaxConnections are open takes the place of the one
	// idle longest (a keep-alive connection between requests, such as one
	// parked between pings), which is closed. When none is idle it is
	// accepted as one of ProbeConnections more, on which only HealthPath
	// and ReadyPath are answered (anything else gets 503 and the connection
	// closes), so that probes still answer at the limit. Beyond those it is
	// closed at once, before any byte is read or a goroutine started for
	// it: the client sees the connection close (and a load balancer tries
	// another instance) instead of waiting in the kernel's accept queue
	// until its connect timeout, as it would behind
	// golang.org/x/net/netutil.LimitListener. Conns reports the counts.
	// Zero means DefaultMaxConnections; negative means no bound.
	MaxConnections int

	// ProbeConnections is how many connections beyond MaxConnections are
	// accepted for probes only. Zero means DefaultProbeConnections;
	// negative means none.
	ProbeConnections int

	// SendTimeout bounds the client's progress in taking a response: each
	// write of it, and its last flush, must be taken within SendTimeout
	// (see the package doc). Zero means DefaultSendTimeout; negative means
	// no bound.
	SendTimeout time.Duration

	// MaxConcurrentStreams bounds the open streams of one HTTP/2
	// connection (SETTINGS_MAX_CONCURRENT_STREAMS); a client opening more
	// has them refused, and one that keeps doing so is disconnected by
	// net/http. Zero means DefaultMaxConcurrentStreams.
	MaxConcurrentStreams int

	// ParkAbove is the number of open connections above which the
	// connections that wait for their client wait outside net/http, each
	// on a small goroutine of its own (about 3 KiB, against about 17 KiB
	// in net/http: its connection goroutine and 4 KiB read and write
	// buffers): a new connection until its first bytes arrive, and a plain
	// HTTP/1.1 keep-alive connection idle for a second between requests.
	// When the client's bytes arrive the connection is served as before,
	// its timeouts unchanged: HeadersTimeout bounds a new connection's
	// wait, KeepAliveTimeout an idle one's; a parked idle connection is
	// still idle for MaxConnections and is closed at the drain's start.
	// A request that finds its connection parked costs more CPU (net/http
	// starts a connection for it again); a busy client, whose next request
	// comes within the second, never does. Below it, and for HTTP/2 and
	// HTTPS keep-alive connections, nothing changes. Parking needs a Unix
	// socket; elsewhere it never happens. Zero means DefaultParkAbove;
	// negative means never.
	ParkAbove int

	// HealthPath is the liveness probe's path. Empty means DefaultHealthPath.
	HealthPath string

	// ReadyPath is the readiness probe's path. Empty means DefaultReadyPath.
	ReadyPath string

	// Ready, when set, is an extra readiness condition ("a worker is
	// ready"), called on every readiness probe, concurrently: it must be
	// cheap and safe for concurrent use. Nil means always ready.
	Ready func() bool

	// Logger receives the server's events and net/http's error log (TLS
	// handshake noise at Debug, handler panics at Error). Nil means none.
	Logger *slog.Logger

	// OnDrain, when set, is called once when the drain starts, after
	// readiness has turned 503 and before the drain delay: the place to shed
	// queued requests with reason shutdown or tell hijacked connections
	// (WebSockets) to wind down. It runs on Serve's goroutine and must
	// return promptly.
	OnDrain func()

	// OnCut, when set, is called once when the drain is cut (ShutdownTimeout
	// or Cut), just before the remaining connections are closed. It runs on
	// Serve's goroutine and must return promptly.
	OnCut func()

	parkGrace time.Duration // zero: defaultParkGrace (tests shorten it)

	mu    sync.Mutex
	state *runState
}

// runState is what a Server shares between Serve, its handlers and the
// methods callable from other goroutines.
type runState struct {
	started  bool // guarded by Server.mu
	draining atomic.Bool
	cutOnce  sync.Once
	cut      chan struct{} // closed by Cut
	conns    connCounter
	park     *parker // set by Serve; nil: nothing is parked
}

func (s *Server) run() *runState {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.state == nil {
		s.state = &runState{cut: make(chan struct{})}
	}
	return s.state
}

// Cut ends the server at once: Serve (or Run) calls OnCut, closes the
// listener and every connection, and returns an error wrapping ErrCut. It
// is the second signal's action; calling it while the server runs normally
// cuts too, and calling it before Serve makes Serve return at once.
// Handlers still running are not waited for: their requests' contexts are
// cancelled as their connections close. Cut does not block and may be
// called any number of times, from any goroutine.
func (s *Server) Cut() {
	rs := s.run()
	rs.cutOnce.Do(func() { close(rs.cut) })
}

// ConnStats counts client connections.
type ConnStats struct {
	// Open is the number of client connections open now, Idle and
	// ProbeOnly included.
	Open int64 `json:"open"`
	// Idle is the number of open connections between requests (HTTP/2:
	// with no open stream): kept alive, doing no work.
	Idle int64 `json:"idle"`
	// ProbeOnly is the number of open connections accepted beyond
	// MaxConnections, for probes only.
	ProbeOnly int64 `json:"probeOnly"`
	// Refused counts connections closed at accept because MaxConnections
	// and ProbeConnections were open.
	Refused uint64 `json:"refused"`
	// Reclaimed counts idle connections closed to make room for a new one
	// at MaxConnections.
	Reclaimed uint64 `json:"reclaimed"`
	// Parked is the number of open connections waiting for their client
	// outside net/http (see ParkAbove), Idle ones and new ones.
	Parked int64 `json:"parked"`
}

// Conns returns the server's connection counts. It is safe for concurrent
// use, before, during and after Serve.
func (s *Server) Conns() ConnStats {
	c := &s.run().conns
	return ConnStats{Open: c.open.Load(), Idle: c.idleCount(), ProbeOnly: c.probeOnly.Load(),
		Refused: c.refused.Load(), Reclaimed: c.reclaimed.Load(), Parked: c.parked.Load()}
}

// Run listens on Addr and serves until ctx is done, then drains; see Serve.
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(context.WithoutCancel(ctx), "tcp", cmp.Or(s.Addr, DefaultAddr))
	if err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln, which it closes, until ctx is done, then drains:
//
//  1. readiness answers 503 at once, keep-alive is switched off (HTTP/1.1
//     responses carry Connection: close, idle HTTP/1.1 connections are
//     closed, parked ones included, HTTP/2 connections get GOAWAY when
//     they have no open stream), and OnDrain is called;
//  2. DrainDelay passes, while new connections and requests are still
//     accepted and served, so that load balancers see the readiness change;
//  3. the listener closes: new connections are refused, and those parked
//     that have not sent a byte yet are closed;
//  4. in-flight requests finish: HTTP/1.1 connections close after their
//     response, HTTP/2 connections get GOAWAY and close after their last
//     stream (net/http's Shutdown);
//  5. when every connection has closed, Serve returns nil.
//
// If connections are still open ShutdownTimeout after ctx was done, or Cut
// is called, Serve calls OnCut, closes them all and returns an error
// wrapping ErrCut. Serve also returns when the listener fails (after
// closing every connection) and when Cut is called before ctx is done.
// Hijacked connections are the handler's: Serve neither waits for nor
// closes them.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	rs := s.run()
	s.mu.Lock()
	started := rs.started
	rs.started = true
	s.mu.Unlock()
	if started {
		ln.Close()
		return errors.New("server: Serve called twice")
	}

	c := s.config()
	hs := s.httpServer(c, rs)
	tlsOn := s.TLSConfig != nil || s.CertFile != "" || s.KeyFile != ""
	rs.park = newParker(c, &rs.conns, !tlsOn)
	ln = &limitListener{Listener: ln, max: int64(c.maxConns), probes: int64(max(c.probeConns, 0)), conns: &rs.conns, park: rs.park, log: c.log}

	served := make(chan error, 1)
	go func() { served <- s.serve(hs, ln, rs.park) }()
	c.log.Info("server: serving", "addr", ln.Addr().String(), "tls", tlsOn, "h2c", s.H2C && !tlsOn)

	select {
	case err := <-served:
		hs.Close()
		return fmt.Errorf("server: serve: %w", err)
	case <-rs.cut:
		return s.cut(c, hs, rs, served, "Cut called before the drain")
	case <-ctx.Done():
	}
	return s.drain(c, hs, rs, served)
}

// serve runs hs on ln and, with a parker, on its readyListener too, until
// both return; it returns ln's error.
func (s *Server) serve(hs *http.Server, ln net.Listener, p *parker) error {
	one := func(l net.Listener) error {
		if s.TLSConfig != nil || s.CertFile != "" || s.KeyFile != "" {
			return hs.ServeTLS(l, s.CertFile, s.KeyFile)
		}
		return hs.Serve(l)
	}
	if p == nil {
		return one(ln)
	}
	rl := readyListener{p: p, addr: ln.Addr()}
	readyDone := make(chan struct{})
	go func() {
		defer close(readyDone)
		one(rl) // its error is ln's, or its closing
	}()
	err := one(ln)
	rl.Close()
	<-readyDone
	return err
}

// config is a Server's configuration with the defaults applied.
type config struct {
	keepAlive, headers, request, shutdown, drainDelay time.Duration
	send, parkGrace                                   time.Duration
	maxHeaderBytes, maxConns, probeConns, h2Streams   int
	parkAbove                                         int
	health, ready                                     string
	log                                               *slog.Logger
}

func (s *Server) config() config {
	c := config{
		keepAlive:      orDefault(s.KeepAliveTimeout, DefaultKeepAliveTimeout),
		headers:        orDefault(s.HeadersTimeout, DefaultHeadersTimeout),
		request:        orDefault(s.RequestTimeout, DefaultRequestTimeout),
		shutdown:       orDefault(s.ShutdownTimeout, DefaultShutdownTimeout),
		drainDelay:     orDefault(s.DrainDelay, DefaultDrainDelay),
		maxHeaderBytes: orDefault(s.MaxHeaderBytes, DefaultMaxHeaderBytes),
		maxConns:       orDefault(s.MaxConnections, DefaultMaxConnections),
		probeConns:     orDefault(s.ProbeConnections, DefaultProbeConnections),
		send:           orDefault(s.SendTimeout, DefaultSendTimeout),
		parkAbove:      orDefault(s.ParkAbove, DefaultParkAbove),
		parkGrace:      cmp.Or(s.parkGrace, defaultParkGrace),
		h2Streams:      cmp.Or(max(s.MaxConcurrentStreams, 0), DefaultMaxConcurrentStreams),
		health:         cmp.Or(s.HealthPath, DefaultHealthPath),
		ready:          cmp.Or(s.ReadyPath, DefaultReadyPath),
		log:            s.Logger,
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	// Headers are part of the request: without the cap, net/http would
	// wait HeadersTimeout for them and then hand the handler a body whose
	// deadline had passed.
	if c.request > 0 && (c.headers <= 0 || c.request < c.headers) {
		c.headers = c.request
	}
	return c
}

// orDefault maps zero to def and negative to "off" (zero, or -1 where the
// net/http field gives zero a meaning of its own).
func orDefault[T time.Duration | int](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return -1
	}
	return v
}

func (s *Server) httpServer(c config, rs *runState) *http.Server {
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetHTTP2(true)
	protos.SetUnencryptedHTTP2(s.H2C)
	hs := &http.Server{
		Handler:           s.front(c, rs),
		TLSConfig:         s.TLSConfig.Clone(),
		IdleTimeout:       c.keepAlive, // -1: none (0 would mean ReadTimeout)
		ReadHeaderTimeout: c.headers,   // -1: none (0 would mean ReadTimeout)
		ReadTimeout:       max(c.request, 0),
		MaxHeaderBytes:    max(c.maxHeaderBytes, 0),
		Protocols:         &protos,
		ErrorLog:          log.New(logWriter{c.log}, "", 0),
		HTTP2: &http.HTTP2Config{
			MaxConcurrentStreams: c.h2Streams,
			// The protocol's minimum frame size: a client may not make
			// the server read (and hold) frames of up to 16 MiB.
			MaxReadFrameSize: 16 << 10,
			// Flow-control windows bound what a client may send ahead of
			// the handler: 256 KiB per stream, 1 MiB per connection.
			MaxReceiveBufferPerStream:     256 << 10,
			MaxReceiveBufferPerConnection: 1 << 20,
			WriteByteTimeout:              max(c.send, 0),
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, counted(c))
		},
		ConnState: func(c net.Conn, st http.ConnState) {
			if cc := counted(c); cc != nil {
				rs.conns.setState(cc, st)
			}
		},
	}
	return hs
}

// drain runs steps 1 to 5 of Serve's drain; started is when ctx was seen
// done.
func (s *Server) drain(c config, hs *http.Server, rs *runState, served <-chan error) error {
	started := time.Now()
	rs.draining.Store(true)
	hs.SetKeepAlivesEnabled(false)
	if rs.park != nil {
		rs.park.closeIdle()
	}
	c.log.Info("server: draining", "drainDelay", c.drainDelay, "shutdownTimeout", c.shutdown, "open", rs.conns.open.Load())
	if s.OnDrain != nil {
		s.OnDrain()
	}

	var deadline <-chan time.Time
	if c.shutdown > 0 {
		t := time.NewTimer(c.shutdown - time.Since(started))
		defer t.Stop()
		deadline = t.C
	}
	if c.drainDelay > 0 {
		t := time.NewTimer(c.drainDelay - time.Since(started))
		defer t.Stop()
		select {
		case <-t.C:
		case <-deadline:
			return s.cut(c, hs, rs, served, "shutdown timeout "+c.shutdown.String()+" passed in the drain delay")
		case <-rs.cut:
			return s.cut(c, hs, rs, served, "Cut called in the drain delay")
		}
	}

	c.log.Info("server: closing the listener", "open", rs.conns.open.Load())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- hs.Shutdown(ctx) }()
	select {
	case <-shut:
		<-served
		c.log.Info("server: drained", "took", time.Since(started))
		return nil
	case <-deadline:
		cancel()
		<-shut
		return s.cut(c, hs, rs, served, "shutdown timeout "+c.shutdown.String()+" passed")
	case <-rs.cut:
		cancel()
		<-shut
		return s.cut(c, hs, rs, served, "Cut called")
	}
}

// cut calls OnCut, closes the listener and every connection, waits for the
// serving goroutine and returns an ErrCut.
func (s *Server) cut(c config, hs *http.Server, rs *runState, served <-chan error, why string) error {
	open := rs.conns.open.Load()
	c.log.Warn("server: cutting connections", "why", why, "open", open)
	if s.OnCut != nil {
		s.OnCut()
	}
	hs.Close()
	<-served
	return fmt.Errorf("%w: %s with %d connections open", ErrCut, why, open)
}
