package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/limit"
)

// render is an instrumented worker. It records the most requests it ever
// held at once and the paths it received, in order. Paths:
//
//	/block/K   waits until the test opens gate K, then answers
//	/sleep?d=D sleeps D (a render's cost, not synchronisation)
//	/echo      answers the request body, and the request headers as X-Got-*
//	/die       closes the connection without answering
//	/cut       sends headers, 10 of 100 promised bytes, then closes
//	/halt/K    sends headers and 10 of 20 promised bytes, waits for gate
//	           K, then sends the rest
//	/streamcut/K sends headers and 10 bytes without a length, waits for
//	           gate K, then closes
//	/sse/K     sends an event, waits for gate K, sends another
//	/events?every=D an endless event stream: an event at once, then one
//	           every D (none more when D is absent), until the client's
//	           connection closes, which it counts (closed); with
//	           plain=1 the same as text/plain without a length (chunked)
//	/headers-then-wait an event stream's header, flushed; an event once
//	           gate "first" opens; then nothing
//	/big?n=N   answers N bytes, with Content-Length
//	/chunked?n=N answers N bytes without Content-Length
//	/hop       answers with hop-by-hop headers
//
// Anything else answers "<name> <path>".
type render struct {
	name string
	fail string // when set, the path served instead of every request's: /die or /cut

	inflight atomic.Int64
	peak     atomic.Int64
	served   atomic.Int64
	conns    atomic.Int64 // connections accepted (rig workers)
	closed   atomic.Int64 // endless streams that saw their connection close

	mu      sync.Mutex
	gates   map[string]chan struct{}
	allOpen bool
	paths   []string
	headers []http.Header
	started chan string
}

func newRender(name string) *render {
	return &render{name: name, gates: make(map[string]chan struct{}), started: make(chan string, 1000)}
}

func (w *render) gate(k string) chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	g, ok := w.gates[k]
	if !ok {
		g = make(chan struct{})
		if w.allOpen {
			close(g)
		}
		w.gates[k] = g
	}
	return g
}

// open lets /block/k (and /sse/k) finish.
func (w *render) open(k string) { close(w.gate(k)) }

// openAll opens every gate, present and future: the end of a test.
func (w *render) openAll() {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, g := range w.gates {
		select {
		case <-g:
		default:
			close(g)
		}
	}
	w.allOpen = true
}

func (w *render) seen() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.paths)
}

func (w *render) lastHeader() http.Header {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.headers) == 0 {
		return nil
	}
	return w.headers[len(w.headers)-1]
}

func (w *render) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	n := w.inflight.Add(1)
	defer w.inflight.Add(-1)
	for {
		p := w.peak.Load()
		if n <= p || w.peak.CompareAndSwap(p, n) {
			break
		}
	}
	w.mu.Lock()
	w.paths = append(w.paths, r.URL.Path)
	w.headers = append(w.headers, r.Header.Clone())
	w.mu.Unlock()
	w.started <- r.URL.Path

	path := r.URL.Path
	if w.fail != "" {
		path = w.fail
	}
	q := r.URL.Query()
	switch {
	case strings.HasPrefix(path, "/block/"):
		<-w.gate(strings.TrimPrefix(path, "/block/"))
	case path == "/sleep":
		d, _ := time.ParseDuration(q.Get("d"))
		time.Sleep(d)
		if v, ok := q["sat"]; ok {
			rw.Header().Set(proxy.HeaderSaturation, v[0])
		}
	case path == "/echo":
		for k, vv := range r.Header {
			rw.Header()["X-Got-"+k] = vv
		}
		rw.Header().Set("X-Got-Host", r.Host)
		io.Copy(rw, r.Body)
		w.served.Add(1)
		return
	case path == "/die":
		panic(http.ErrAbortHandler)
	case path == "/cut":
		rw.Header().Set("Content-Length", "100")
		io.WriteString(rw, "0123456789")
		rw.(http.Flusher).Flush()
		panic(http.ErrAbortHandler)
	case strings.HasPrefix(path, "/halt/"):
		w.pause(rw, "Content-Length", "20", "0123456789", strings.TrimPrefix(path, "/halt/"), "abcdefghij")
		return
	case strings.HasPrefix(path, "/streamcut/"):
		io.WriteString(rw, "0123456789")
		rw.(http.Flusher).Flush()
		<-w.gate(strings.TrimPrefix(path, "/streamcut/"))
		panic(http.ErrAbortHandler)
	case strings.HasPrefix(path, "/sse/"):
		w.pause(rw, "Content-Type", "text/event-stream", "data: 1\n\n", strings.TrimPrefix(path, "/sse/"), "data: 2\n\n")
		return
	case path == "/headers-then-wait":
		rw.Header().Set("Content-Type", "text/event-stream")
		rw.(http.Flusher).Flush()
		<-w.gate("first")
		io.WriteString(rw, "data: 1\n\n")
		rw.(http.Flusher).Flush()
		<-r.Context().Done()
		return
	case path == "/events":
		ct := "text/event-stream"
		if q.Get("plain") != "" {
			ct = "text/plain"
		}
		rw.Header().Set("Content-Type", ct)
		var tick <-chan time.Time
		if d, _ := time.ParseDuration(q.Get("every")); d > 0 {
			t := time.NewTicker(d)
			defer t.Stop()
			tick = t.C
		}
		for n := 1; ; n++ {
			fmt.Fprintf(rw, "data: %d\n\n", n)
			rw.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				w.closed.Add(1)
				return
			case <-tick:
			}
		}
	case path == "/big" || path == "/chunked":
		n, _ := strconv.Atoi(q.Get("n"))
		if path == "/big" {
			rw.Header().Set("Content-Length", strconv.Itoa(n))
		}
		b := []byte(strings.Repeat("x", 1024))
		for n > 0 {
			k := min(n, len(b))
			rw.Write(b[:k])
			n -= k
			if path == "/chunked" {
				rw.(http.Flusher).Flush()
			}
		}
		w.served.Add(1)
		return
	case path == "/hop":
		h := rw.Header()
		h.Set("Connection", "X-Private")
		h.Set("X-Private", "1")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Thing", "1")
		h.Set("X-Kept", "1")
	}
	fmt.Fprintf(rw, "%s %s", w.name, r.URL.Path)
	w.served.Add(1)
}

// pause answers with header k: v and first, flushed, then waits for gate
// and ends with rest.
func (w *render) pause(rw http.ResponseWriter, k, v, first, gate, rest string) {
	rw.Header().Set(k, v)
	io.WriteString(rw, first)
	rw.(http.Flusher).Flush()
	<-w.gate(gate)
	io.WriteString(rw, rest)
	w.served.Add(1)
}

// rig is a Proxy with workers on an in-memory network, for tests in a synctest bubble.
type rig struct {
	t       *testing.T
	net     *testutil.Network
	c       *admission.Controller
	p       *proxy.Proxy
	workers map[int]*render
	nextID  int
}

// newRig builds a Proxy; co.SampleWindow is turned off unless set. Unless
// co.Limit is set, the Controller's algorithm is a fixed limit far above
// any slot count, so the Proxy's ceiling rules, as sluice wires them.
func newRig(t *testing.T, o proxy.Options, co admission.Options) *rig {
	t.Helper()
	if co.SampleWindow == 0 {
		co.SampleWindow = -1
	}
	if co.Limit == nil {
		co.Limit = limit.NewFixed(admission.MaxLimit)
	}
	c, err := admission.New(co)
	if err != nil {
		t.Fatal(err)
	}
	g := &rig{t: t, net: &testutil.Network{}, c: c, workers: make(map[int]*render)}
	o.Controller = c
	o.Dial = g.net.Dial
	o.Lookahead = strictUnlessAsked(o.Lookahead)
	g.p, err = proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, w := range g.workers {
			w.openAll()
		}
		synctest.Wait()
		g.p.CloseIdleConnections()
		c.Close()
	})
	return g
}

// worker starts a worker of the given concurrency and adds it to the
// Proxy; it returns the worker and its endpoint ID.
func (g *rig) worker(concurrency int) (*render, int) {
	return g.addWorker(supervisor.Endpoint{Concurrency: concurrency})
}

// adaptiveWorker starts a worker whose limit the Proxy finds, up to most.
func (g *rig) adaptiveWorker(most int) (*render, int) {
	return g.addWorker(supervisor.Endpoint{Concurrency: most, Adaptive: true})
}

// addWorker starts a worker and adds it to the Proxy as e, with its ID
// and address filled in.
func (g *rig) addWorker(e supervisor.Endpoint) (*render, int) {
	g.nextID++
	id := g.nextID
	w := newRender("w" + strconv.Itoa(id))
	addr := "worker" + strconv.Itoa(id)
	l := g.net.Listen(addr)
	srv := &http.Server{Handler: w, ConnState: func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			w.conns.Add(1)
		}
	}}
	go srv.Serve(l)
	g.t.Cleanup(func() { srv.Close() })
	g.workers[id] = w
	e.ID, e.Network, e.Addr = id, "tcp", addr
	g.p.Add(e)
	return w, id
}

// sink is a ResponseWriter for tests: safe to read while the handler
// runs, and, when gate is set, a client that takes nothing until gate is
// closed (every Write blocks on it).
type sink struct {
	gate chan struct{}

	mu      sync.Mutex
	header  http.Header
	code    int // 0 until WriteHeader
	body    bytes.Buffer
	flushes int
	flushed string // the body as of the last Flush
}

func newSink() *sink { return &sink{header: make(http.Header)} }

func (s *sink) Header() http.Header { return s.header }

func (s *sink) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.code == 0 {
		s.code = code
	}
}

func (s *sink) Write(b []byte) (int, error) {
	if s.gate != nil {
		<-s.gate
	}
	s.WriteHeader(http.StatusOK)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.body.Write(b)
}

func (s *sink) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.flushes++
	s.flushed = s.body.String()
}

func (s *sink) snapshot() (code int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code, s.body.String()
}

// call is a request in flight through the Proxy's ServeHTTP.
type call struct {
	w       *sink
	cancel  context.CancelFunc
	done    chan struct{}
	aborted bool // the handler panicked with http.ErrAbortHandler
}

// send starts r through the Proxy in its own goroutine, writing to w (a
// new sink when nil).
func (g *rig) send(r *http.Request, w *sink) *call {
	if w == nil {
		w = newSink()
	}
	ctx, cancel := context.WithCancel(r.Context())
	c := &call{w: w, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					panic(v)
				}
				c.aborted = true
			}
		}()
		g.p.ServeHTTP(w, r.WithContext(ctx))
	}()
	return c
}

func (g *rig) get(path string) *call {
	return g.send(httptest.NewRequest("GET", path, nil), nil)
}

// finished reports whether the call has returned; call after synctest.Wait.
func (c *call) finished() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// result waits for the call and returns its status and body.
func (c *call) result() (int, string) {
	<-c.done
	return c.w.snapshot()
}

func supervisorEndpoint(id int, addr string) supervisor.Endpoint {
	return supervisor.Endpoint{ID: id, Network: "tcp", Addr: addr, Concurrency: 1}
}

// strictUnlessAsked turns the lookahead off unless a test set it: most
// tests count a worker's slots, and a request waiting in a busy worker
// would be one more than they expect. The lookahead's own tests set it.
func strictUnlessAsked(lookahead int) int {
	if lookahead == 0 {
		return -1
	}
	return lookahead
}
