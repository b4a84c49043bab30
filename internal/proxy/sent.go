package proxy

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
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
// One replay stays, inside workerClient.roundTrip, as the Transport made
// it: a GET or HEAD (or a request with an Idempotency-Key) whose reused
// keep-alive connection fails before any byte of the response is sent
// again on a fresh connection to the same worker, which answers it if the
// connection was merely stale. If the worker died, that fresh dial fails;
// the request still counts as sent, so it is not passed on.

// countingConn counts the bytes written to and read from a connection to
// a worker.
type countingConn struct {
	net.Conn
	written atomic.Int64
	read    atomic.Int64
}

func (c *countingConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.written.Add(int64(n))
	return n, err
}

func (c *countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.read.Add(int64(n))
	return n, err
}

// call is one request's use of a workerClient: whether any byte of it was
// written to any of the connections it was given (the client may give it
// two, see above), and the means to abort it from another goroutine (the
// exchange's hang timer). The zero value is ready; it is safe for
// concurrent use.
type call struct {
	mu       sync.Mutex
	conn     *workerConn        // the connection in use, nil when none
	stopDial context.CancelFunc // cancels the dial in progress, nil when none
	err      error              // why it was aborted; nil when it was not
	sent     bool

	// info, when set before the call starts, is told each informational
	// (1xx) response read before the final one (passthrough.go). An
	// interface, not a func: an *exchange in it costs no allocation.
	info infoSink
	// inline (set by beginInline, under mu) makes roundTrip wait for the
	// response to begin only until wait (zero: no bound) or an interrupt,
	// and return errPending then; pending holds what resume needs (owned
	// by the goroutine running the call).
	inline  bool
	wait    time.Time
	pending *pendingSend
	// interrupted is set by interrupt: a read on the handler's goroutine
	// is to stop waiting and leave the rest to a runner.
	interrupted atomic.Bool
}

// beginInline starts the call on the handler's goroutine (see inline).
func (c *call) beginInline(wait time.Time) {
	c.mu.Lock()
	c.inline, c.wait = true, wait
	c.mu.Unlock()
}

// endInline ends what beginInline started, before the call goes on on a
// runner or is over: interrupt no longer touches the connection.
func (c *call) endInline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inline = false
	if c.conn != nil {
		_ = c.conn.c.SetReadDeadline(time.Time{})
	}
}

// interrupt makes a read in progress on the handler's goroutine, and any
// read it starts after, end at once with os.ErrDeadlineExceeded: the
// handler is needed elsewhere (its client left). Once the call has left
// the handler's goroutine it does nothing.
func (c *call) interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.inline {
		return
	}
	c.interrupted.Store(true)
	if c.conn != nil {
		_ = c.conn.c.SetReadDeadline(time.Now())
	}
}

type infoSink interface{ gotInfo(code int, h http.Header) }

// abort closes the connection in use or cancels the dial in progress, so
// that the request fails with err, and fails whatever it tries next. The
// first abort's err stays.
func (c *call) abort(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	if c.conn != nil {
		c.conn.c.Close()
	}
	if c.stopDial != nil {
		c.stopDial()
	}
}

// aborted returns abort's err, nil when the call was not aborted.
func (c *call) aborted() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// use records wc as the connection in use; false when the call was
// aborted already.
func (c *call) use(wc *workerConn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	c.conn = wc
	return true
}

// done forgets the connection in use, which abort must no longer close,
// and reports whether the call was not aborted.
func (c *call) done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = nil
	return c.err == nil
}

// dialing records the cancel func of a dial in progress (nil once it is
// over); false when the call was aborted already.
func (c *call) dialing(stop context.CancelFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopDial = stop
	return c.err == nil
}

// setReadDeadline sets the read deadline of the connection in use, if
// any.
func (c *call) setReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	return c.conn.c.SetReadDeadline(t)
}

func (c *call) markSent() {
	c.mu.Lock()
	c.sent = true
	c.mu.Unlock()
}

// wasSent reports whether any byte of the request reached a connection.
func (c *call) wasSent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}
