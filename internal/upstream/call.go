package upstream

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// countingConn counts the bytes written to and read from a connection to
// the upstream.
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

// Call is one request's use of a Client: whether any byte of it was
// written to any of the connections it was given (the Client may give it
// two: see RoundTrip's replay), and the means to abort it from another
// goroutine (a caller's hang timer). The zero value is ready; it is safe
// for concurrent use. A Call serves one request and is not reused.
type Call struct {
	// Info, when set before the call starts, is told each informational
	// (1xx) response read before the final one. An interface, not a func,
	// so that a caller's own pointer in it costs no allocation.
	Info InfoSink

	mu       sync.Mutex
	conn     *conn              // the connection in use, nil when none
	stopDial context.CancelFunc // cancels the dial in progress, nil when none
	err      error              // why it was aborted; nil when it was not
	sent     bool

	// inline (set by BeginInline, under mu) makes RoundTrip wait for the
	// response to begin only until wait (zero: no bound) or an interrupt,
	// and return ErrPending then; pending holds what Resume needs (owned
	// by the goroutine running the call).
	inline  bool
	wait    time.Time
	pending *pendingSend
	// interrupted is set by Interrupt: a read on the caller's goroutine
	// is to stop waiting and leave the rest to another.
	interrupted atomic.Bool
}

// InfoSink is told the informational (1xx) responses of a Call.
type InfoSink interface {
	// GotInfo is called on the goroutine reading the response, before
	// RoundTrip or Resume returns; h is the 1xx response's own header.
	GotInfo(code int, h http.Header)
}

// BeginInline marks the call as run on a goroutine that is needed
// elsewhere as soon as wait passes (zero: no bound) or Interrupt is
// called: RoundTrip then waits for the response to begin only until
// either, and returns ErrPending. A body read with a read deadline
// (SetReadDeadline) ends so too. EndInline ends that mode, before the
// call goes on on another goroutine.
func (c *Call) BeginInline(wait time.Time) {
	c.mu.Lock()
	c.inline, c.wait = true, wait
	c.mu.Unlock()
}

// EndInline ends what BeginInline started, before the call goes on on
// another goroutine or is over: Interrupt no longer touches the
// connection.
func (c *Call) EndInline() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.inline = false
	if c.conn != nil {
		_ = c.conn.c.SetReadDeadline(time.Time{})
	}
}

// Interrupt makes a read in progress on the inline goroutine, and any
// read it starts after, end at once with os.ErrDeadlineExceeded: that
// goroutine is needed elsewhere (its client left, say). Outside
// BeginInline and EndInline it does nothing.
func (c *Call) Interrupt() {
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

// Interrupted reports whether Interrupt was called while inline: a read
// would end at once.
func (c *Call) Interrupted() bool { return c.interrupted.Load() }

// Abort closes the connection in use or cancels the dial in progress, so
// that the request fails with err, and fails whatever it tries next. The
// first Abort's err stays.
func (c *Call) Abort(err error) {
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

// Err returns Abort's err, nil when the call was not aborted.
func (c *Call) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// use records wc as the connection in use; false when the call was
// aborted already.
func (c *Call) use(wc *conn) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return false
	}
	c.conn = wc
	return true
}

// done forgets the connection in use, which Abort must not close then,
// and reports whether the call was not aborted.
func (c *Call) done() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.conn = nil
	return c.err == nil
}

// dialing records the cancel func of a dial in progress (nil once it is
// over); false when the call was aborted already.
func (c *Call) dialing(stop context.CancelFunc) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stopDial = stop
	return c.err == nil
}

// SetReadDeadline sets the read deadline of the connection in use, if
// any: a response body's read past it fails with os.ErrDeadlineExceeded
// and may be tried again.
func (c *Call) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.conn == nil {
		return nil
	}
	return c.conn.c.SetReadDeadline(t)
}

func (c *Call) markSent() {
	c.mu.Lock()
	c.sent = true
	c.mu.Unlock()
}

// Sent reports whether any byte of the request reached a connection: a
// request not sent may go to another upstream, one sent may have been
// acted on (or have killed its upstream) and must not.
func (c *Call) Sent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// Reached reports whether the request may have reached its upstream: it
// was written, or it is on a connection now (being written, or awaiting
// or reading its response; Sent is settled only when that ends).
func (c *Call) Reached() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent || c.conn != nil
}
