package server

import (
	"io"
	"log/slog"
	"net"
	"sync/atomic"
)

// connCounter counts a server's client connections.
type connCounter struct {
	open    atomic.Int64
	refused atomic.Uint64
}

// limitListener closes the connections it accepts while max are open
// (max <= 0: no bound) and counts the others until they close. Accept is
// called by one goroutine (http.Server.Serve), so the check and the count
// cannot interleave with another accept; closes only lower the count.
type limitListener struct {
	net.Listener
	max   int64
	conns *connCounter
	log   *slog.Logger
	full  bool // the last connection accepted was refused; Accept only
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.max > 0 && l.conns.open.Load() >= l.max {
			c.Close()
			l.conns.refused.Add(1)
			if !l.full {
				l.full = true
				l.log.Warn("server: connection limit reached, refusing connections", "maxConnections", l.max)
			}
			continue
		}
		if l.full {
			l.full = false
			l.log.Info("server: accepting connections again", "refused", l.conns.refused.Load())
		}
		l.conns.open.Add(1)
		return &countedConn{Conn: c, conns: l.conns}, nil
	}
}

// countedConn leaves the count when first closed. It keeps the optional
// methods net/http looks for on a *net.TCPConn: CloseWrite, so that a
// 431 reaches the client before the connection closes, and ReadFrom, for
// sendfile.
type countedConn struct {
	net.Conn
	conns  *connCounter
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.conns.open.Add(-1)
	}
	return c.Conn.Close()
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
