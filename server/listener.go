package server

import (
	"crypto/tls"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"syscall"
)

// connCounter counts a server's client connections and keeps those idle
// between requests in the order they went idle, so that the limit can
// reclaim the one idle longest.
//
// Lock order: mu is a leaf.
type connCounter struct {
	open      atomic.Int64
	refused   atomic.Uint64
	reclaimed atomic.Uint64
	probeOnly atomic.Int64
	parked    atomic.Int64

	mu   sync.Mutex
	idle idleList // longest idle first
}

// idleList is a list of connections threaded through them (clientConn's
// idle links), so that a connection going idle after every response
// allocates no list element. Guarded by connCounter.mu.
type idleList struct {
	front, back *clientConn
	n           int
}

func (l *idleList) pushBack(c *clientConn) {
	c.idlePrev, c.idleNext, c.inIdle = l.back, nil, true
	if l.back != nil {
		l.back.idleNext = c
	} else {
		l.front = c
	}
	l.back = c
	l.n++
}

func (l *idleList) remove(c *clientConn) {
	if c.idlePrev != nil {
		c.idlePrev.idleNext = c.idleNext
	} else {
		l.front = c.idleNext
	}
	if c.idleNext != nil {
		c.idleNext.idlePrev = c.idlePrev
	} else {
		l.back = c.idlePrev
	}
	c.idlePrev, c.idleNext, c.inIdle = nil, nil, false
	l.n--
}

// setState follows net/http's view of s (http.Server.ConnState). News
// from a session that is no longer its connection's current one (the
// StateClosed of a session whose connection was parked and served again
// since) is ignored.
func (cc *connCounter) setState(s *countedConn, st http.ConnState) {
	if st == http.StateClosed {
		return // clientConn.close has done it, or the connection is parked
	}
	c := s.client
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if c.session != s {
		return
	}
	if st == http.StateIdle {
		if !c.inIdle && !c.closed.Load() {
			cc.idle.pushBack(c)
		}
		// The next read is net/http's wait for the next request.
		s.armed.Store(s.park != nil && s.http1.Load())
		return
	}
	cc.notIdleLocked(c)
}

func (cc *connCounter) notIdleLocked(c *clientConn) {
	if c.inIdle {
		cc.idle.remove(c)
	}
}

// idleCount is the number of connections idle between requests.
func (cc *connCounter) idleCount() int64 {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return int64(cc.idle.n)
}

// reclaim closes the connection idle longest, if any, and reports whether
// it did. A request arriving on it in that instant sees the connection
// close, as with any keep-alive timeout; clients retry such requests.
func (cc *connCounter) reclaim() bool {
	cc.mu.Lock()
	c := cc.idle.front
	if c == nil {
		cc.mu.Unlock()
		return false
	}
	cc.idle.remove(c)
	cc.mu.Unlock()
	c.close()
	cc.reclaimed.Add(1)
	return true
}

// limitListener bounds the open connections (max <= 0: no bound). At the
// bound it first closes the connection idle longest to make room; failing
// that, it accepts up to probes more connections that only the probes are
// answered on (probeOnly); beyond those it closes new connections at once,
// unread. Accept is called by one goroutine (http.Server.Serve), so the
// check and the count cannot interleave with another accept; closes only
// lower the count. With a parker, a new connection that has sent nothing
// yet waits there instead of being returned (see parker).
type limitListener struct {
	net.Listener
	max    int64
	probes int64
	conns  *connCounter
	park   *parker // nil: nothing is parked
	log    *slog.Logger
	full   bool // the last connection accepted was refused; Accept only
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		probeOnly := false
		if l.max > 0 && l.conns.open.Load() >= l.max && (!l.conns.reclaim() || l.conns.open.Load() >= l.max) {
			// (A reclaimed connection may have been one for probes only.)
			if l.conns.open.Load() >= l.max+l.probes {
				// Counted before the close, so that a client that has seen
				// it closed finds it counted.
				l.conns.refused.Add(1)
				c.Close()
				if !l.full {
					l.full = true
					l.log.Warn("server: connection limit reached, refusing connections", "maxConnections", l.max)
				}
				continue
			}
			probeOnly = true
		}
		if l.full && !probeOnly {
			l.full = false
			l.log.Info("server: accepting connections again", "refused", l.conns.refused.Load())
		}
		l.conns.open.Add(1)
		if probeOnly {
			l.conns.probeOnly.Add(1)
		}
		cc := &clientConn{Conn: c, conns: l.conns, probeOnly: probeOnly}
		if l.park != nil && !probeOnly {
			cc.raw = rawConn(c)
			if l.park.parkNew(cc) {
				continue
			}
		}
		return cc.newSession(l.park), nil
	}
}

// rawConn is c's file descriptor access, nil when it has none (a pipe).
func rawConn(c net.Conn) syscall.RawConn {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return rc
}

// clientConn is one accepted client connection for its whole life, which
// spans several net/http connections (sessions) when it is parked between
// requests. It leaves the count when first closed.
type clientConn struct {
	net.Conn
	raw       syscall.RawConn // nil: never parked
	conns     *connCounter
	probeOnly bool // accepted beyond the limit: probes only
	// idlePrev, idleNext and inIdle are c's place in conns.idle; guarded
	// by conns.mu.
	idlePrev, idleNext *clientConn
	inIdle             bool
	session            *countedConn // the one net/http serves now; guarded by conns.mu
	closed             atomic.Bool
}

// newSession is what net/http gets for c, the next time it serves it.
// Keep-alive connections are parked between requests only over plain
// HTTP/1.1 (p.idle): a TLS connection's state lives in its *tls.Conn.
func (c *clientConn) newSession(p *parker) *countedConn {
	s := &countedConn{Conn: c.Conn, client: c}
	if p != nil && p.idle && c.raw != nil {
		s.park = p
	}
	c.conns.mu.Lock()
	c.session = s
	c.conns.mu.Unlock()
	return s
}

func (c *clientConn) close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.conns.open.Add(-1)
		if c.probeOnly {
			c.conns.probeOnly.Add(-1)
		}
		c.conns.mu.Lock()
		c.conns.notIdleLocked(c)
		c.conns.mu.Unlock()
	}
	return c.Conn.Close()
}

// countedConn is one session of a clientConn: what net/http serves, from
// Accept to Close. It keeps the optional methods net/http looks for on a
// *net.TCPConn: CloseWrite, so that a 431 reaches the client before the
// connection closes, and ReadFrom, for sendfile.
type countedConn struct {
	net.Conn
	client *clientConn
	idleWait
	closeOnce atomic.Bool
}

// Close closes the client connection, or, when net/http's wait for the
// next request was given up to park it (idleWait), hands it to the parker.
// Only a session's first Close acts: the connection may be another
// session's by the second.
func (c *countedConn) Close() error {
	if !c.closeOnce.CompareAndSwap(false, true) {
		return nil
	}
	if c.parking.Load() && c.park.parkIdle(c.client) {
		return nil
	}
	return c.client.close()
}

func (c *countedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *countedConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}

// counted returns the countedConn under c (net/http hands ConnState a
// *tls.Conn for HTTPS), nil when there is none.
func counted(c net.Conn) *countedConn {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	cc, _ := c.(*countedConn)
	return cc
}
