package proxy

import (
	"net"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
)

// Whether a request reached its worker decides whether it may go to
// another one. A request is sent elsewhere only when no byte of it was
// written to any connection: a refused dial, or a kept-alive connection
// found closed before the request was written. Once any byte was written
// the worker may have acted on it, and a worker that dies (or closes the
// connection) before answering is indistinguishable from one the request
// itself killed: sending it on would let one poisonous request kill a
// second worker, and the next. Such a request gets 502, whatever its
// method, including a reset before any byte of the response.
//
// One replay stays, inside net/http's Transport: a GET or HEAD (or a
// request with an Idempotency-Key) whose reused keep-alive connection
// fails before any byte of the response is sent again on a fresh
// connection to the same worker, which answers it if the connection was
// merely stale. If the worker died, that fresh dial fails; the request
// still counts as sent, so it is not passed on.

// countingConn counts the bytes written to a connection to a worker.
type countingConn struct {
	net.Conn
	written atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

// sendTrace learns, through httptrace, whether any byte of one request
// was written to a connection. The Transport may give it several
// connections in turn (its own replay); each one's writes count. The zero
// value is ready; it is safe for concurrent use.
type sendTrace struct {
	mu   sync.Mutex
	conn *countingConn // the connection in use, nil when none
	at   int64         // conn's count when it was given to the request
	sent bool          // a byte was written to an earlier connection
}

func (t *sendTrace) trace() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{GotConn: t.gotConn}
}

func (t *sendTrace) gotConn(info httptrace.GotConnInfo) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settleLocked()
	c, ok := info.Conn.(*countingConn)
	if !ok {
		t.sent = true // not ours to count: assume the worst
		return
	}
	t.conn, t.at = c, c.written.Load()
}

// settleLocked folds the current connection's writes into sent.
// REQUIRES t.mu held.
func (t *sendTrace) settleLocked() {
	if t.conn != nil && t.conn.written.Load() != t.at {
		t.sent = true
	}
	t.conn = nil
}

// wasSent reports whether any byte of the request reached a connection.
// Call it once the round trip has failed.
func (t *sendTrace) wasSent() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.settleLocked()
	return t.sent
}
