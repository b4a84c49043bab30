package upstream

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/textproto"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Client speaks HTTP/1.1 to one upstream over kept-alive connections.
//
// Create one with New; the zero value is not usable. Safe for concurrent
// use. A Client holds no goroutine: its idle connections are closed by a
// timer, and CloseIdle closes them at once.
type Client struct {
	network, addr string
	dial          func(ctx context.Context, network, addr string) (net.Conn, error)
	dialTimeout   time.Duration
	maxIdle       int
	idleTimeout   time.Duration
	unsolicited   func() // Options.Unsolicited

	// broken is set once the upstream sent bytes outside a response: its
	// framing cannot be trusted, and none of its connections is reused.
	broken atomic.Bool

	mu    sync.Mutex
	idle  []*conn     // the most recently used last
	sweep *time.Timer // closes connections idle past idleTimeout
	armed bool        // sweep is set to fire
}

// conn is a connection to the upstream. Its buffers are pooled: taken
// for a request and given back with the connection, so that an idle
// connection holds nothing but its socket.
type conn struct {
	c      *countingConn
	lr     io.LimitedReader // between c and br: bounds a response's header
	br     *bufio.Reader
	idleAt time.Time

	raw   syscall.RawConn       // nil when nc is not a socket
	peek  func(fd uintptr) bool // look's look at raw
	found idleState             // peek's finding
}

// idle408 begins the 408 a server may send on a kept-alive connection it
// closes while idle (RFC 9110 15.5.9): a close, not bytes out of place, as
// the Transport takes it too.
const idle408 = "HTTP/1.1 408"

// idleState is what a look at an idle connection found.
type idleState uint8

const (
	idleQuiet       idleState = iota // nothing to read: it may carry a request
	idleClosed                       // end of file or an error: the upstream closed it
	idleUnsolicited                  // bytes the upstream sent outside any response
)

const (
	// maxResponseHeader bounds the header of an upstream's response, as the
	// Transport's default MaxResponseHeaderBytes did.
	maxResponseHeader = 10 << 20
	// max1xx bounds the informational responses before the final one, as
	// the Transport does.
	max1xx = 5
	// bufSize is the size of a connection's read and write buffers, taken
	// from pools for a request: a request of the front's usual size is one
	// write.
	bufSize = 32 << 10
)

// SyncWriteMax is the largest request body written before the response is
// read, on the caller's goroutine. A larger body is written by a goroutine
// of its own while the response is read: an upstream may answer (or
// stream its answer) before it has read the whole body, and neither side
// must wait for the other's buffers to drain. A call whose body is larger
// is never left pending (ErrPending).
const SyncWriteMax = 4 << 10

var (
	readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, bufSize) }}
	writers = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, bufSize) }}
)

var errHeaderTooLarge = fmt.Errorf("upstream: response header over %d bytes", maxResponseHeader)

// RoundTrip sends req on a kept-alive connection, or a new one, and reads
// the response's header. The response's body gives the connection back
// when it is read to the end, or closes it when closed before. c is how
// the request may be aborted from another goroutine, and records whether
// any of it was sent; a Call serves one request.
//
// req is written as Request.Write writes it, framed by its ContentLength:
// its Body must hold that many bytes, and GetBody, when set, gives them
// again for a replay. 1xx responses before the final one are told to
// c.Info. On the caller's goroutine (Call.BeginInline), RoundTrip returns
// ErrPending when the upstream has not begun to answer by the call's
// wait: Resume then reads the response.
//
// A request that fails on a reused connection before any byte of the
// response came is sent once more on a fresh connection to the same
// upstream when none of it was written, or when it is replayable (GET,
// HEAD, OPTIONS, TRACE, or an Idempotency-Key): the connection was likely
// closed by the upstream while idle. The Transport made the same replay.
func (cl *Client) RoundTrip(c *Call, req *http.Request) (*http.Response, error) {
	fresh := false
	for {
		wc, reused, err := cl.get(c, fresh)
		if err != nil {
			return nil, err
		}
		resp, retry, err := cl.send(c, wc, req, reused)
		if err == nil || !retry || err == ErrPending {
			return resp, err
		}
		if req.GetBody != nil {
			if req.Body, err = req.GetBody(); err != nil {
				return nil, err
			}
		}
		fresh = true
	}
}

// send writes req on wc and reads the response's header. On failure it
// closes wc and reports whether the request may be sent again (see
// RoundTrip).
func (cl *Client) send(c *Call, wc *conn, req *http.Request, reused bool) (*http.Response, bool, error) {
	if !c.use(wc) {
		wc.c.Close()
		return nil, false, c.Err()
	}
	w0, r0 := wc.c.written.Load(), wc.c.read.Load()
	var wdone chan error // the writer's result, when it runs apart
	var werr error
	if req.ContentLength > SyncWriteMax {
		wdone = make(chan error, 1)
		go func() { wdone <- WriteRequest(wc.c, req) }()
	} else {
		werr = WriteRequest(wc.c, req)
	}
	if werr == nil && c.inline && wdone == nil && awaitFirstByte(c, wc) {
		c.pending = &pendingSend{wc: wc, w0: w0, r0: r0}
		return nil, false, ErrPending
	}
	return cl.receive(c, wc, req, werr, wdone, w0, r0, reused)
}

// ErrPending is RoundTrip's answer, for a call on the caller's goroutine
// (Call.BeginInline), when the upstream has not begun to answer by the
// call's wait or the call was interrupted: the connection stays in use,
// and Resume reads the response.
var ErrPending = errors.New("upstream: no answer yet")

// pendingSend is a request written whose response has not begun.
type pendingSend struct {
	wc     *conn
	w0, r0 int64
}

// awaitFirstByte waits until wc has a byte of the response to read, or
// c's wait passes (zero: no bound), or c is interrupted; true means one of
// the last two with nothing read, so that the response can be read whole
// later, on another goroutine.
func awaitFirstByte(c *Call, wc *conn) bool {
	if wc.br.Buffered() > 0 {
		return false
	}
	_ = wc.c.SetReadDeadline(c.wait)
	if c.interrupted.Load() {
		_ = wc.c.SetReadDeadline(time.Time{})
		return true
	}
	_, err := wc.br.Peek(1)
	_ = wc.c.SetReadDeadline(time.Time{})
	return errors.Is(err, os.ErrDeadlineExceeded) && wc.br.Buffered() == 0
}

// Resume reads the response to req, which RoundTrip left pending
// (ErrPending) on c, as RoundTrip would have.
func (cl *Client) Resume(c *Call, req *http.Request) (*http.Response, error) {
	ps := c.pending
	c.pending = nil
	resp, _, err := cl.receive(c, ps.wc, req, nil, nil, ps.w0, ps.r0, false)
	return resp, err
}

// receive reads the response to req, written on wc (werr: how the write
// failed; wdone: the writer running apart), and settles the connection as
// send describes.
func (cl *Client) receive(c *Call, wc *conn, req *http.Request, werr error, wdone chan error, w0, r0 int64, reused bool) (*http.Response, bool, error) {
	var resp *http.Response
	var rerr error
	if werr == nil {
		resp, rerr = readResponse(wc, req, c.Info)
	}
	if werr == nil && rerr == nil {
		c.markSent() // the upstream answered: it had the request
		keep := !resp.Close && !req.Close && resp.StatusCode != http.StatusSwitchingProtocols
		resp.Body = &respBody{cl: cl, c: c, wc: wc, body: resp.Body, keep: keep, wdone: wdone}
		return resp, false, nil
	}
	// Sent before the connection is let go: a request off its connection
	// and not yet marked sent would not be Reached, and a death of the
	// worker reported in that instant would not count it among the
	// requests the worker held.
	if wc.c.written.Load() != w0 {
		c.markSent()
	}
	cl.release(c, wc, false)
	if wdone != nil {
		werr = <-wdone // the connection is closed: the writer has stopped
	}
	if wc.c.written.Load() != w0 {
		c.markSent() // what the writer running apart wrote before it stopped
	}
	if err := c.Err(); err != nil {
		return nil, false, err
	}
	answered := wc.c.read.Load() != r0
	sent := wc.c.written.Load() != w0
	retry := reused && !answered && (!sent || replayable(req))
	return nil, retry, firstErr(rerr, werr)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// replayable reports whether req may be sent twice (RFC 9110 9.2.2), as
// the Transport judges it.
func replayable(req *http.Request) bool {
	if req.Body != nil && req.Body != http.NoBody && req.GetBody == nil {
		return false
	}
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace:
		return true
	}
	_, a := req.Header["Idempotency-Key"]
	_, b := req.Header["X-Idempotency-Key"]
	return a || b
}

// WriteRequest writes req to w whole, in one write when it fits the
// buffer: what Request.Write sends for a request with its body buffered
// (Host first, no User-Agent of Go's own when the header is there and
// empty, Content-Length as net/http sends it, no Transfer-Encoding or
// Trailer), without its formatting, sorting and allocations.
func WriteRequest(w io.Writer, req *http.Request) error {
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	if strings.ContainsAny(host, " \t\r\n") {
		return fmt.Errorf("upstream: invalid Host %q", host)
	}
	bw := writers.Get().(*bufio.Writer)
	bw.Reset(w)
	defer func() {
		bw.Reset(nil)
		writers.Put(bw)
	}()
	bw.WriteString(req.Method)
	bw.WriteByte(' ')
	if p := req.URL.EscapedPath(); p != "" {
		bw.WriteString(p)
	} else {
		bw.WriteByte('/')
	}
	if req.URL.RawQuery != "" {
		bw.WriteByte('?')
		bw.WriteString(req.URL.RawQuery)
	}
	bw.WriteString(" HTTP/1.1\r\nHost: ")
	bw.WriteString(host)
	bw.WriteString("\r\n")
	if _, ok := req.Header["User-Agent"]; !ok {
		bw.WriteString("User-Agent: Go-http-client/1.1\r\n")
	}
	if sendsLength(req) {
		bw.WriteString("Content-Length: ")
		bw.Write(strconv.AppendInt(bw.AvailableBuffer(), req.ContentLength, 10))
		bw.WriteString("\r\n")
	}
	writeFields(bw, req.Header)
	bw.WriteString("\r\n")
	if req.ContentLength > 0 {
		n, err := io.Copy(bw, req.Body)
		if err == nil && n != req.ContentLength {
			err = fmt.Errorf("upstream: request body of %d bytes, want %d", n, req.ContentLength)
		}
		if err != nil {
			return err
		}
	}
	return bw.Flush()
}

// writeFields writes h's fields but those WriteRequest writes itself or
// leaves out (skipHeader), a line per value.
func writeFields(bw *bufio.Writer, h http.Header) {
	for k, vv := range h {
		if skipHeader(k) {
			continue
		}
		if k == "User-Agent" {
			// One, as Request.Write sends it; empty means none.
			vv = vv[:min(len(vv), 1)]
		}
		for _, v := range vv {
			if k == "User-Agent" && v == "" {
				continue
			}
			bw.WriteString(k)
			bw.WriteString(": ")
			writeValue(bw, v)
			bw.WriteString("\r\n")
		}
	}
}

// sendsLength reports whether a Content-Length goes with req, as net/http
// decides: with a body, and with an empty one for POST, PUT and PATCH.
func sendsLength(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch:
		return true
	}
	return req.ContentLength > 0
}

// skipHeader reports whether header k of a request is written apart (Host,
// User-Agent, Content-Length) or never (framing: the body is sent whole
// with its length), as Request.Write leaves them out.
func skipHeader(k string) bool {
	switch k {
	case "Host", "Content-Length", "Transfer-Encoding", "Trailer":
		return true
	}
	return false
}

// writeValue writes a header value with its line breaks made spaces and
// its outer white space trimmed, as net/http writes header values.
func writeValue(bw *bufio.Writer, v string) {
	v = textproto.TrimString(v)
	if !strings.ContainsAny(v, "\r\n") {
		bw.WriteString(v)
		return
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '\r' || c == '\n' {
			c = ' '
		}
		bw.WriteByte(c)
	}
}

// readResponse reads the final response's header, skipping up to max1xx
// informational ones, each told to info unless it is nil.
func readResponse(wc *conn, req *http.Request, info InfoSink) (*http.Response, error) {
	wc.lr.N = maxResponseHeader + bufSize
	defer func() { wc.lr.N = math.MaxInt64 }()
	for range max1xx + 1 {
		resp, err := http.ReadResponse(wc.br, req)
		if err != nil {
			if wc.lr.N <= 0 {
				return nil, errHeaderTooLarge
			}
			return nil, err
		}
		if resp.StatusCode < 100 || resp.StatusCode > 199 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		if info != nil {
			info.GotInfo(resp.StatusCode, resp.Header)
		}
	}
	return nil, errors.New("upstream: too many 1xx responses")
}

// get returns an idle connection (reused) or, when there is none that is
// still open or fresh is set, a new one.
func (cl *Client) get(c *Call, fresh bool) (wc *conn, reused bool, err error) {
	for !fresh {
		now := time.Now()
		if wc = cl.popIdle(now); wc == nil {
			break
		}
		switch wc.look() {
		case idleQuiet:
			wc.take()
			return wc, true, nil
		case idleUnsolicited:
			cl.violated()
		}
		wc.c.Close()
	}
	ctx, cancel := context.WithTimeout(context.Background(), cl.dialTimeout)
	defer cancel()
	if !c.dialing(cancel) {
		return nil, false, c.Err()
	}
	nc, err := cl.dial(ctx, cl.network, cl.addr)
	c.dialing(nil)
	if err != nil {
		if aerr := c.Err(); aerr != nil {
			return nil, false, aerr
		}
		return nil, false, err
	}
	wc = newConn(nc)
	wc.take()
	return wc, false, nil
}

// take gives wc a read buffer for a request.
func (wc *conn) take() {
	wc.lr = io.LimitedReader{R: wc.c, N: math.MaxInt64}
	wc.br = readers.Get().(*bufio.Reader)
	wc.br.Reset(&wc.lr)
}

// idleReady gives wc's read buffer back, and reports whether wc may carry
// another request: nothing unread is left in it.
func (wc *conn) idleReady() bool {
	clean := wc.br.Buffered() == 0
	wc.br.Reset(nil)
	readers.Put(wc.br)
	wc.br = nil
	return clean
}

// look tells whether a kept-alive connection may carry another request:
// a peek that never waits, just before the request is written, finds
// nothing to read (idleQuiet), or the end of file (idleClosed), or bytes
// (idleUnsolicited). Bytes on an idle connection are no answer to any
// request: they are what is left of an earlier response whose upstream
// wrote past its framing (a Content-Length too short, then a later
// write), and the next request's response would begin with them. So every
// reuse is looked at, however short the idle time: an upstream's stray write
// may come at any time after the response's end. (The Transport learnt
// the same from a read it kept pending on every idle connection; nginx's
// and HAProxy's idle server connections close on any read event. One
// peek before reuse costs a system call and no goroutine.) Connections
// that are not sockets (tests' in-memory pipes) are taken as quiet.
func (wc *conn) look() idleState {
	if wc.raw == nil {
		return idleQuiet
	}
	if wc.raw.Read(wc.peek) != nil {
		return idleClosed
	}
	return wc.found
}

// newConn wraps a new connection; peek is made once, here, so that look
// allocates nothing.
func newConn(nc net.Conn) *conn {
	wc := &conn{c: &countingConn{Conn: nc}}
	if sc, ok := nc.(syscall.Conn); ok {
		if raw, err := sc.SyscallConn(); err == nil {
			wc.raw = raw
			wc.peek = func(fd uintptr) bool {
				var b [len(idle408)]byte
				n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
				switch {
				case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
					wc.found = idleQuiet
				case err == nil && n == len(b) && string(b[:]) == idle408:
					wc.found = idleClosed // a server's notice that it closes an idle connection
				case err == nil && n > 0:
					wc.found = idleUnsolicited
				default:
					wc.found = idleClosed
				}
				return true // never wait: an idle connection has nothing to read
			}
		}
	}
	return wc
}

// popIdle returns the most recently used idle connection, nil when there
// is none. Connections idle past idleTimeout are closed.
func (cl *Client) popIdle(now time.Time) *conn {
	cl.mu.Lock()
	n := len(cl.idle)
	if n == 0 {
		cl.mu.Unlock()
		return nil
	}
	wc := cl.idle[n-1]
	cl.idle[n-1] = nil
	cl.idle = cl.idle[:n-1]
	var stale []*conn
	if now.Sub(wc.idleAt) >= cl.idleTimeout {
		// The newest is stale: so are all the others.
		stale = append(cl.idle, wc)
		cl.idle, wc = nil, nil
	}
	cl.mu.Unlock()
	for _, s := range stale {
		s.c.Close()
	}
	return wc
}

// release ends c's use of wc: back to the idle connections when keep is
// set and c was not aborted, else closed. A response that ended with
// bytes already read past its end breaks the framing (see look): the
// connection is closed, and the upstream's are no longer reused.
func (cl *Client) release(c *Call, wc *conn, keep bool) {
	if !c.done() {
		keep = false
	}
	if wc.br != nil && !wc.idleReady() && keep {
		cl.violated()
		keep = false
	}
	if keep && cl.broken.Load() {
		keep = false
	}
	if !keep {
		wc.c.Close()
		return
	}
	now := time.Now()
	cl.mu.Lock()
	if len(cl.idle) >= cl.maxIdle {
		cl.mu.Unlock()
		wc.c.Close()
		return
	}
	wc.idleAt = now
	cl.idle = append(cl.idle, wc)
	if !cl.armed {
		cl.armed = true
		if cl.sweep == nil {
			cl.sweep = time.AfterFunc(cl.idleTimeout, cl.closeStale)
		} else {
			cl.sweep.Reset(cl.idleTimeout)
		}
	}
	cl.mu.Unlock()
}

// violated records that the upstream sent bytes outside a response. From
// then on none of its connections is kept alive: each request has a
// connection of its own, which no stray byte of another response can
// reach. An upstream that wrote past its framing once cannot be trusted with
// the next response either, and the look before reuse cannot see a stray
// write that comes after the next request is written. The idle
// connections are closed at once.
func (cl *Client) violated() {
	cl.broken.Store(true)
	cl.CloseIdle()
	if cl.unsolicited != nil {
		cl.unsolicited()
	}
}

// closeStale closes the connections idle past idleTimeout, and sets the
// sweep again for the oldest of the others.
func (cl *Client) closeStale() {
	now := time.Now()
	cl.mu.Lock()
	k := 0
	for k < len(cl.idle) && now.Sub(cl.idle[k].idleAt) >= cl.idleTimeout {
		k++
	}
	stale := make([]*conn, k)
	copy(stale, cl.idle[:k])
	cl.idle = append(cl.idle[:0], cl.idle[k:]...)
	cl.armed = len(cl.idle) > 0
	if cl.armed {
		cl.sweep.Reset(cl.idleTimeout - now.Sub(cl.idle[0].idleAt))
	}
	cl.mu.Unlock()
	for _, s := range stale {
		s.c.Close()
	}
}

// CloseIdle closes every idle connection. Connections in use are not
// affected.
func (cl *Client) CloseIdle() {
	cl.mu.Lock()
	idle := cl.idle
	cl.idle = nil
	if cl.sweep != nil {
		cl.sweep.Stop()
	}
	cl.armed = false
	cl.mu.Unlock()
	for _, wc := range idle {
		wc.c.Close()
	}
}

// respBody is a response body from the upstream. At its end the
// connection goes back to the client for the next request; closed before,
// or after an error, the connection is closed.
type respBody struct {
	cl    *Client
	c     *Call
	wc    *conn
	body  io.ReadCloser
	keep  bool       // the response allows another request on wc
	wdone chan error // the writer's result when it ran apart; nil otherwise
	done  bool
}

func (b *respBody) Read(p []byte) (int, error) {
	if b.done {
		return 0, io.EOF
	}
	n, err := b.body.Read(p)
	if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		b.finish(err == io.EOF)
	}
	return n, err
}

func (b *respBody) Close() error {
	if !b.done {
		b.finish(false)
	}
	return nil
}

// finish hands the connection back, kept only at the end of a response to
// a request written whole: an upstream that answered before reading all of a
// large body may not be done with the connection.
func (b *respBody) finish(eof bool) {
	b.done = true
	keep := eof && b.keep
	if b.wdone != nil {
		select {
		case err := <-b.wdone:
			keep = keep && err == nil
			b.wdone = nil
		default:
			keep = false
		}
	}
	b.cl.release(b.c, b.wc, keep)
}
