package server

import (
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// parker keeps connections that wait for their client's next bytes out of
// net/http, where each would hold a goroutine with a grown stack and two
// 4 KiB buffers (about 17 KiB): a new connection that has sent nothing yet,
// and a plain HTTP/1.1 keep-alive connection idle between requests. Each
// waits for its socket to become readable on a goroutine of its own that
// never grows (about 3 KiB with the connection), under the read deadline
// it had: the headers timeout for a new connection, the keep-alive timeout
// for an idle one. When bytes arrive, the connection is handed to net/http
// again through ready, a second listener of the same http.Server; when the
// deadline passes or the client hangs up, it is closed here. Parking
// happens only above a number of open connections (above), so that a
// server with few connections pays nothing for it.
//
// An idle connection is taken from net/http by its own wait for the next
// request: the read that waits (countedConn.readNext) gives up after grace
// with errParked, net/http closes the connection, and the close parks it
// instead. It is done only when net/http's read buffer is empty, so no
// byte the client sent is left behind.
//
// Lock order: mu is a leaf (connections are closed and handed on outside it).
type parker struct {
	above    int64         // park only with more connections open
	grace    time.Duration // how long an idle connection stays in net/http
	newWait  time.Duration // bound on a new connection's wait; <= 0: none
	idle     bool          // park idle keep-alive connections (plain HTTP)
	conns    *connCounter
	ready    chan *countedConn
	done     chan struct{} // closed by close
	draining atomic.Bool   // set under mu: idle connections are closed, not parked

	mu      sync.Mutex
	waiting map[*clientConn]bool // parked now; true: idle between requests
	closed  bool
	wg      sync.WaitGroup // the waiting goroutines
}

// errParked ends net/http's wait for the next request on a connection that
// is parked instead.
var errParked = errors.New("server: connection parked")

// newParker returns nil where parking is not supported.
func newParker(c config, conns *connCounter, plain bool) *parker {
	if !canPark || c.parkAbove < 0 {
		return nil
	}
	return &parker{
		above: int64(c.parkAbove), grace: c.parkGrace, newWait: c.headers, idle: plain,
		conns: conns, ready: make(chan *countedConn), done: make(chan struct{}),
		waiting: make(map[*clientConn]bool),
	}
}

// active reports whether connections are parked now.
func (p *parker) active() bool {
	return p.conns.open.Load() > p.above && !p.draining.Load()
}

// parkNew parks a new connection that has nothing to read yet and reports
// whether it did.
func (p *parker) parkNew(c *clientConn) bool {
	if c.raw == nil || !p.active() {
		return false
	}
	waits := false
	if c.raw.Control(func(fd uintptr) { _, done := peek(fd); waits = !done }) != nil || !waits {
		return false
	}
	if p.newWait > 0 {
		c.Conn.SetReadDeadline(time.Now().Add(p.newWait))
	}
	return p.park(c, false)
}

// parkIdle parks a keep-alive connection net/http has let go of and
// reports whether it did; if not, the caller closes it.
func (p *parker) parkIdle(c *clientConn) bool { return p.park(c, true) }

func (p *parker) park(c *clientConn, idle bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || (idle && p.draining.Load()) || c.closed.Load() {
		return false
	}
	p.waiting[c] = idle
	p.conns.parked.Add(1)
	p.wg.Add(1)
	go p.wait(c)
	return true
}

// wait is a parked connection's goroutine: it returns the connection to
// net/http when the client's bytes arrive, and closes it when its read
// deadline passes, the client hangs up or the parker closes.
func (p *parker) wait(c *clientConn) {
	defer p.wg.Done()
	readable := false
	err := c.raw.Read(func(fd uintptr) bool {
		var done bool
		readable, done = peek(fd)
		return done
	})
	p.mu.Lock()
	delete(p.waiting, c)
	closed := p.closed
	p.mu.Unlock()
	p.conns.parked.Add(-1)
	if err != nil || !readable || closed {
		c.close()
		return
	}
	s := c.newSession(p)
	select {
	case p.ready <- s:
	case <-p.done:
		c.close()
	}
}

// closeIdle closes the idle parked connections and parks no more of them:
// the drain's first step, as net/http closes its own idle connections.
// New connections already parked keep waiting for their first request.
func (p *parker) closeIdle() {
	p.mu.Lock()
	p.draining.Store(true)
	var idle []*clientConn
	for c, isIdle := range p.waiting {
		if isIdle {
			idle = append(idle, c)
		}
	}
	p.mu.Unlock()
	for _, c := range idle {
		c.close()
	}
}

// close closes every parked connection, stops parking and waits for the
// waiting goroutines. It may be called more than once.
func (p *parker) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	close(p.done)
	parked := make([]*clientConn, 0, len(p.waiting))
	for c := range p.waiting {
		parked = append(parked, c)
	}
	p.mu.Unlock()
	for _, c := range parked {
		c.close()
	}
	p.wg.Wait()
}

// readyListener hands parked connections whose client has sent bytes back
// to the http.Server, which serves it beside the real listener. Closing it
// closes the parker.
type readyListener struct {
	p    *parker
	addr net.Addr
}

func (l readyListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.p.ready:
		return c, nil
	case <-l.p.done:
		return nil, net.ErrClosed
	}
}

func (l readyListener) Close() error   { l.p.close(); return nil }
func (l readyListener) Addr() net.Addr { return l.addr }

// idleWait is a session's part in parking an idle HTTP/1.1 connection.
// net/http, once a response is done, reports the connection idle (armed),
// sets the keep-alive read deadline and reads; while the parker is active
// that deadline is brought forward to the grace (graced), so that the wait
// costs no more calls than net/http makes. If the client's bytes come in
// time, the keep-alive deadline is put back (restore) unless net/http
// sets a deadline of its own first, as it does at once.
type idleWait struct {
	park     *parker      // nil: this session is never parked
	http1    atomic.Bool  // it carries HTTP/1.x (set by the front handler)
	armed    atomic.Bool  // it went idle: the next deadline and Read are the wait
	graced   atomic.Bool  // the wait's deadline is the grace
	restore  atomic.Bool  // the wait ended in time: put its deadline back
	parking  atomic.Bool  // the wait was given up: Close parks
	bufSize  int          // the first Read's length: net/http's empty read buffer
	deadline atomic.Int64 // the read deadline net/http set last, Unix ns; 0: none
}

func (c *countedConn) SetReadDeadline(t time.Time) error {
	if c.park == nil {
		return c.Conn.SetReadDeadline(t)
	}
	var ns int64
	if !t.IsZero() {
		ns = t.UnixNano()
	}
	c.deadline.Store(ns)
	c.restore.Store(false)
	if c.armed.Load() && c.park.active() {
		if g := time.Now().Add(c.park.grace); t.IsZero() || g.Before(t) {
			c.graced.Store(true)
			t = g
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *countedConn) Read(p []byte) (int, error) {
	if c.park == nil {
		return c.Conn.Read(p)
	}
	if c.bufSize == 0 {
		c.bufSize = len(p)
	}
	if c.armed.Load() {
		c.armed.Store(false)
		if c.graced.Load() {
			c.graced.Store(false)
			return c.readNext(p)
		}
	}
	if c.restore.Load() {
		c.restore.Store(false)
		c.Conn.SetReadDeadline(c.keepAliveDeadline())
	}
	return c.Conn.Read(p)
}

func (c *countedConn) keepAliveDeadline() time.Time {
	if ns := c.deadline.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

// readNext is net/http's wait for the next request on an idle HTTP/1.1
// connection, under the grace. When p is the whole of net/http's read
// buffer (so that it holds none of the client's bytes) and the grace
// passes, errParked makes net/http close the session, and Close parks the
// connection under its keep-alive deadline.
func (c *countedConn) readNext(p []byte) (int, error) {
	if len(p) != c.bufSize {
		c.Conn.SetReadDeadline(c.keepAliveDeadline())
		return c.Conn.Read(p)
	}
	n, err := c.Conn.Read(p)
	if n == 0 && errors.Is(err, os.ErrDeadlineExceeded) {
		c.Conn.SetReadDeadline(c.keepAliveDeadline())
		c.parking.Store(true)
		return 0, errParked
	}
	c.restore.Store(true)
	return n, err
}
