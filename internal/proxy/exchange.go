package proxy

import (
	"errors"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/upstream"
	"github.com/sluicehq/sluice/limit"
)

var (
	errHung = errors.New("proxy: worker hung")
	// The reasons sluice closes a streamed response's worker connection
	// itself (see streams.go).
	errClientGone     = errors.New("proxy: the client left a streamed response")
	errStreamIdle     = errors.New("proxy: streamed response silent past its idle bound")
	errStreamTimeout  = errors.New("proxy: streamed response past its total bound")
	errTooManyStreams = errors.New("proxy: too many streams")
)

// An exchange is one request sent to one worker. Its worker side sends the
// request, reads the response into memory ahead of the client, and frees
// the slot when the worker has finished, whoever is still listening (a
// stream nobody listens to is cut instead: streams.go); it runs on the
// handler's goroutine, then on a runner (see side). The handler owns the
// client side: it waits for the first batch (await), then relays
// (Proxy.relay). They meet under mu.
//
// The admission permit goes with the outcome: an exchange that fails before
// the handler took its response hands the permit back to the handler
// (failed), which may retry with it; otherwise the worker side gives it
// back when the worker has finished.
type exchange struct {
	p         *Proxy
	ep        *endpoint
	in        *http.Request // the client's request
	req       *http.Request // outgoing: &out
	out       http.Request
	url       url.URL       // out's
	body      *body         // req's body, released by finish; nil for none
	call      upstream.Call // req's way to the worker: aborted when hung, sent or not
	permit    admission.Permit
	shape     *shapeTicket // with Options.Poison; nil: nothing to report
	start     time.Time
	hangAfter time.Duration // silence after which the worker is hung; <= 0 never
	limit     int           // bytes that may wait in memory for the client

	notify chan struct{} // capacity 1: news for the handler
	space  chan struct{} // capacity 1: the handler took data or left

	// What the response's HeaderSaturation said; written by the worker
	// side before it reads the body, read by finish on the same goroutine.
	reported bool
	side     side    // where the worker side runs; written and read by it alone
	sat      float64 // NaN when it could not be read

	hung *time.Timer // aborts the call after hangAfter (or streamIdle) of silence; nil: never
	// streamIdle replaces hangAfter once the response is a stream (<= 0:
	// no bound); written by takeResponse under mu, before the body is read.
	streamIdle time.Duration
	// streamEnd aborts a stream at its total bound; nil: none.
	streamEnd *time.Timer
	// inlineW is the client's writer while the response's header is read
	// on the handler's goroutine (runInline), for 1xx responses.
	inlineW http.ResponseWriter

	mu       sync.Mutex
	state    xstate
	timedOut bool // the client was answered 504
	// settled: finish has begun to give back the slot. detached: the
	// stream gave back its slot and permit early and counts as one of the
	// streams instead (streams.go). Both sit beside state and timedOut in
	// what was padding: the exchange stays in its size class.
	settled  bool
	detached bool
	resp     *http.Response
	stream   bool // relay as it comes rather than after the whole body
	sse      bool // text/event-stream: headers go out at once
	chunks   []chunk
	pending  int      // bytes in chunks
	done     bool     // the worker has finished or failed
	err      error    // why it failed; nil when done after EOF
	failed   bool     // err came before the handler took the response
	infos    []info   // 1xx responses for the handler to write (passthrough.go)
	trailers []string // the trailers resp announced, read before its body
}

// xstate is the client side's state, under mu:
//
//	waiting ──await: ready──▶ delivered
//	waiting ──serve, await: budget spent or client gone──▶ abandoned
//	delivered ──relay: client gone, or a stream refused──▶ abandoned
type xstate uint8

const (
	waiting   xstate = iota // the handler awaits the first batch
	delivered               // the handler relays
	abandoned               // nobody listens: the client left or got 504
)

// side is where the worker side of an exchange runs, and so what it does
// when it would wait. It moves once at most, from the handler to a
// runner (handOff):
//
//	serve, body <= upstream.SyncWriteMax:  onHandler ──handOff──▶ onRunner
//	serve, a larger body (written apart):  onRunner
//
// onHandler (runInline, readBodyInline) is the handler's own goroutine,
// before it awaits: it never waits for the handler, who is itself. When
// the worker has not begun to answer by the budget or the client leaves,
// when the response is a stream, when its body is still coming at the
// budget, or when memory to read into is short, it hands the rest off.
// onRunner (run, resumeTask, bodyTask, readBody) is a pooled runner, while
// the handler awaits or relays: it waits for the handler to take what is
// read, and for memory to read into.
type side uint8

const (
	onHandler side = iota
	onRunner
)

type chunk struct {
	buf *[]byte
	n   int
}

func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// run sends the request and reads the response, on a runner from the
// start (onRunner), until the worker has finished, failed, or was found
// hung.
func (x *exchange) run() {
	x.side = onRunner
	x.armHung()
	resp, err := x.ep.client.RoundTrip(&x.call, x.req)
	x.afterHead(resp, err)
}

// runInline runs the exchange on the handler's goroutine (onHandler),
// which saves the two goroutine hand-offs per request that run costs (on a
// front with an idle CPU, each wakes a thread). It returns once the
// response is read whole, or, having handed the rest to a runner, when the
// worker has not begun to answer by wait (zero: no bound) or answered with
// a stream, or its body is still coming at wait: the handler then awaits
// as after run. REQUIRES x.call.BeginInline(wait) called.
func (x *exchange) runInline(w http.ResponseWriter, wait time.Time) (handedOff bool) {
	x.side = onHandler
	x.armHung()
	x.inlineW = w
	resp, err := x.ep.client.RoundTrip(&x.call, x.req)
	x.inlineW = nil
	if err == upstream.ErrPending {
		x.handOff((*resumeTask)(x))
		return true
	}
	if err != nil {
		x.finish(nil, err, x.hung)
		return false
	}
	x.takeResponse(resp)
	x.mu.Lock()
	stream := x.stream
	x.mu.Unlock()
	if stream {
		x.handOff((*bodyTask)(x))
		return true
	}
	return x.readBodyInline(resp, wait)
}

// handOff moves the worker side from the handler to a runner, which runs
// t, the rest of it.
func (x *exchange) handOff(t task) {
	x.side = onRunner
	x.call.EndInline()
	x.p.runs.start(t)
}

// armHung starts the hang timer: past hangAfter of silence the call is
// aborted.
func (x *exchange) armHung() {
	if x.hangAfter > 0 {
		x.hung = time.AfterFunc(x.hangAfter, x.silent)
	}
}

// silent aborts the call, whose worker has said nothing for too long: a
// hung worker, or a stream past its idle bound.
func (x *exchange) silent() {
	x.mu.Lock()
	stream := x.streamIdle > 0
	x.mu.Unlock()
	if stream {
		x.call.Abort(errStreamIdle)
	} else {
		x.call.Abort(errHung)
	}
}

// silence is how long the worker may stay silent now: hangAfter, or the
// stream's idle bound; <= 0 means no bound. Only the goroutine reading
// the response calls it.
func (x *exchange) silence() time.Duration {
	if x.streamIdle != 0 {
		return x.streamIdle
	}
	return x.hangAfter
}

// rearm restarts the silence timer after the worker said something.
func (x *exchange) rearm(hung *time.Timer) {
	if hung == nil {
		return
	}
	if d := x.silence(); d > 0 {
		hung.Reset(d)
	} else {
		hung.Stop()
	}
}

// resumeTask reads the response runInline left pending, on a runner.
type resumeTask exchange

func (t *resumeTask) run() {
	x := (*exchange)(t)
	resp, err := x.ep.client.Resume(&x.call, x.req)
	x.afterHead(resp, err)
}

// bodyTask reads the body of the response runInline took, on a runner.
type bodyTask exchange

func (t *bodyTask) run() {
	x := (*exchange)(t)
	x.readBody(x.resp)
}

// afterHead takes the response, or the failure, of the request.
func (x *exchange) afterHead(resp *http.Response, err error) {
	if err != nil {
		x.finish(nil, err, x.hung)
		return
	}
	x.takeResponse(resp)
	x.readBody(resp)
}

// readBodyInline reads resp's body on the handler's goroutine until the
// worker has finished, then finishes the exchange. It never waits for the
// handler: when a read would pass wait (zero: no bound) or the call is
// interrupted, or the memory to read into is not there, it hands the rest
// to a runner and returns true. The response is not a stream (those are
// handed off at once), so what is read never passes x.limit, and the
// handler, not awaiting yet, is not woken until finish.
func (x *exchange) readBodyInline(resp *http.Response, wait time.Time) (handedOff bool) {
	hung := x.hung
	if !wait.IsZero() {
		_ = x.call.SetReadDeadline(wait) // until handOff's EndInline clears it
	}
	var rb *[]byte // the buffer read into; its memory is reserved
	defer func() {
		if rb != nil {
			x.p.dropBuf(rb)
		}
	}()
	for {
		if rb == nil {
			if !x.p.mem.reserve(bufSize) {
				x.handOff((*bodyTask)(x))
				return true
			}
			rb = x.p.getBuf()
		}
		var n int
		var rerr error
		if x.call.Interrupted() {
			rerr = os.ErrDeadlineExceeded // the read would end so at once
		} else {
			n, rerr = resp.Body.Read(*rb)
		}
		x.rearm(hung)
		x.mu.Lock()
		if n > 0 && x.state != abandoned {
			rb = x.appendLocked(rb, n)
		}
		x.mu.Unlock()
		switch {
		case errors.Is(rerr, os.ErrDeadlineExceeded):
			// The budget is spent with the body still coming: the rest
			// is read on a runner, the handler answers 504.
			x.handOff((*bodyTask)(x))
			return true
		case rerr == io.EOF:
			x.finish(resp, nil, hung)
			return false
		case rerr != nil:
			x.finish(resp, rerr, hung)
			return false
		}
	}
}

// readBody reads resp's body on a runner until the worker has finished,
// then finishes the exchange. It waits for the handler to take what is
// read when more than x.limit waits for it, and for memory to read into
// (reserveBuf).
func (x *exchange) readBody(resp *http.Response) {
	hung := x.hung
	var rb *[]byte // the buffer read into; its memory is reserved
	defer func() {
		if rb != nil {
			x.p.dropBuf(rb)
		}
	}()
	for {
		if rb == nil {
			rb = x.p.getBuf()
			x.reserveBuf(hung)
		}
		n, rerr := resp.Body.Read(*rb)
		x.rearm(hung)
		x.mu.Lock()
		if n > 0 && x.state != abandoned {
			rb = x.appendLocked(rb, n)
		}
		if rerr != nil {
			x.mu.Unlock()
			if rerr == io.EOF {
				rerr = nil
			}
			x.finish(resp, rerr, hung)
			return
		}
		// More than limit is waiting for the client: stop reading, so that
		// the worker finishes no sooner than the client lets it.
		for x.pending > x.limit && x.state != abandoned {
			x.mu.Unlock()
			x.waitSpace(hung)
			x.mu.Lock()
		}
		// The handler is woken only for what it acts on: a waiting one
		// when it may start relaying, a relaying one for more to send. A
		// response buffered whole so wakes it once, when it is complete.
		wake := x.state == delivered || x.readyLocked()
		x.mu.Unlock()
		if wake {
			signal(x.notify)
		}
	}
}

// takeResponse records the worker's response headers and wakes the
// handler if it may start relaying. The saturation report is read and
// removed here, before the handler may copy the header: the client never
// sees it.
func (x *exchange) takeResponse(resp *http.Response) {
	if v, ok := resp.Header[HeaderSaturation]; ok {
		delete(resp.Header, HeaderSaturation)
		x.reported = true
		x.sat = math.NaN()
		if len(v) == 1 {
			x.sat = parseSaturation(v[0])
		}
	}
	x.mu.Lock()
	x.resp = resp
	x.trailers = trailerNames(resp.Trailer) // the body's reads add to the map
	x.sse = isEventStream(resp.Header.Get("Content-Type"))
	x.stream = x.sse || resp.ContentLength < 0 || resp.ContentLength > int64(x.limit)
	if x.stream {
		x.boundStreamLocked()
	}
	wake := x.readyLocked()
	x.mu.Unlock()
	if wake {
		signal(x.notify)
	}
}

// appendLocked adds the n bytes read into rb to the chunks waiting for
// the client, and returns rb, or nil when rb became a chunk itself. It
// fills the last chunk before starting another: the memory held is the
// bytes waiting, not the reads that brought them. REQUIRES x.mu held.
func (x *exchange) appendLocked(rb *[]byte, n int) *[]byte {
	k := 0
	if i := len(x.chunks) - 1; i >= 0 && x.chunks[i].n < bufSize {
		c := &x.chunks[i]
		k = copy((*c.buf)[c.n:], (*rb)[:n])
		c.n += k
	}
	if k < n {
		copy(*rb, (*rb)[k:n])
		x.chunks = append(x.chunks, chunk{rb, n - k})
		rb = nil
	}
	x.pending += n
	return rb
}

// reserveBuf reserves the memory of the buffer readBody is about to read
// into. Over the budget, the response is relayed as a stream from then
// on, and readBody waits until the client has taken what is held; the one
// buffer to read into is then taken whatever the budget, or the response
// could not be relayed at all.
func (x *exchange) reserveBuf(hung *time.Timer) {
	for !x.p.mem.reserve(bufSize) {
		x.mu.Lock()
		if x.state == abandoned || len(x.chunks) == 0 {
			x.mu.Unlock()
			x.p.mem.force(bufSize)
			return
		}
		if !x.stream {
			x.stream = true
			x.p.streamedForMem.Add(1)
		}
		x.mu.Unlock()
		x.waitSpace(hung)
	}
}

// waitSpace tells the handler there is news and waits for it to take
// some, with the hang timer stopped: a slow client is not a hung worker.
func (x *exchange) waitSpace(hung *time.Timer) {
	signal(x.notify)
	if hung != nil {
		hung.Stop()
	}
	<-x.space
	x.rearm(hung)
}

// finish frees the slot, then settles the permit and the counters. err is
// nil when the worker finished its response. (RoundTrip may fail with a
// bare io.EOF: the worker closed the connection without answering.)
func (x *exchange) finish(resp *http.Response, err error, hung *time.Timer) {
	if hung != nil {
		hung.Stop()
	}
	if x.streamEnd != nil {
		x.streamEnd.Stop()
	}
	if resp != nil {
		resp.Body.Close()
	}
	x.body.release() // the transport is done with it
	aerr := x.call.Err()
	wasHung := aerr == errHung
	if wasHung || (err != nil && aerr != nil) {
		err = aerr // why the connection was closed, not what the read saw
	}
	now := time.Now()
	p, e := x.p, x.ep
	x.account(resp, err, wasHung)
	x.released(err, now)
	// The slot is free before the handler can learn of a failure and
	// retry, or give the permit to the next request.
	x.mu.Lock()
	late := x.timedOut
	detached := x.detached
	x.settled = true
	x.mu.Unlock()
	rtt := now.Sub(x.start)
	if !detached {
		p.pool.complete(e, completion{done: err == nil, rtt: rtt, dropped: late,
			reported: x.reported, sat: x.sat})
	}

	x.mu.Lock()
	x.done, x.err = true, err
	if err != nil && x.state == waiting {
		x.failed = true
		// Nobody will relay what was read: give its memory back.
		for _, c := range x.chunks {
			x.p.dropBuf(c.buf)
		}
		x.chunks, x.pending = nil, 0
	}
	failed, timedOut := x.failed, x.timedOut
	wasted := err == nil && x.state == abandoned
	x.mu.Unlock()
	if wasted {
		p.wasted.Add(1)
	}
	switch {
	case detached:
		p.streams.open.Add(-1) // its slot and permit went back when it detached
	case failed:
		// The handler decides: retry with the permit, or give it back.
	case err != nil && !timedOut:
		x.permit.Release()
	default:
		x.permit.DoneSample(limit.Sample{Now: now, RTT: rtt, Dropped: timedOut})
	}
	signal(x.notify)
}

// account counts the exchange's outcome, err, at its worker and, when the
// worker was hung, reports it.
func (x *exchange) account(resp *http.Response, err error, wasHung bool) {
	p, e := x.p, x.ep
	switch {
	case err == errClientGone || err == errStreamIdle || err == errStreamTimeout:
		p.streams.cut.Add(1) // sluice closed it: no failure of the worker's
	case err == errTooManyStreams:
	case err != nil:
		e.failures.Add(1)
		if isDialError(err) {
			p.dialFailures.Add(1)
		}
	default:
		e.served.Add(1)
	}
	if !wasHung {
		return
	}
	p.hung.Add(1)
	p.log.Error("proxy: worker hung; connection closed",
		slog.Int("worker", e.ID), slog.String("addr", e.Addr),
		slog.Duration("silentFor", x.hangAfter), slog.String("path", x.req.URL.Path))
	// A worker that never answered (no response headers) is stuck, an
	// endless loop say: out of rotation before its slot is freed, so that
	// the slot is not given again while it is replaced. One silent in the
	// middle of a body may be a quiet stream (an event stream between
	// events): only its connection is closed.
	if resp == nil && p.o.OnHung != nil && p.pool.hang(e) {
		p.log.Error("proxy: hung worker taken out of rotation and reported for replacement", slog.Int("worker", e.ID))
		p.o.OnHung(e.ID)
	}
}

// readyLocked reports whether the handler should start relaying: the
// response is complete, or too large to wait for, or a stream with
// something to send. REQUIRES x.mu held.
func (x *exchange) readyLocked() bool {
	switch {
	case x.resp == nil:
		return false
	case x.done, x.pending > x.limit, x.sse:
		return true
	}
	return x.stream && x.pending > 0
}

// abandonLocked leaves the response to the worker side, which reads it
// to the end and discards it; or, for a stream, which may never end,
// closes the worker's connection at once, so that the worker learns its
// client left and the slot is freed (a buffered response is a render that
// may be finishing: it keeps its slot until it has). REQUIRES x.mu held.
func (x *exchange) abandonLocked() {
	if x.stream && !x.done {
		x.call.Abort(errClientGone)
	}
	x.state = abandoned
	for _, c := range x.chunks {
		x.p.dropBuf(c.buf)
	}
	x.chunks, x.pending = nil, 0
}

// isEventStream reports whether the media type of content-type ct is
// text/event-stream. (mime.ParseMediaType would allocate a map per
// response for the parameters.)
func isEventStream(ct string) bool {
	mt, _, _ := strings.Cut(ct, ";")
	return strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
}
