package proxy

import (
	"net/http"
	"sync/atomic"
	"time"
)

// Streams. A response relayed as it comes (text/event-stream, one without
// a length, or one longer than BufferResponseBytes) may never end: an
// event stream lives as long as its client, a download as long as its
// slowest reader. Such a response is bounded apart from a render:
//
//   - Its client leaving (or being cut by the server's send timeout)
//     closes the worker's connection at once: the worker learns it (Node's
//     'close') and its slot is freed. A buffered response, a render that
//     may be finishing, keeps its slot until the worker has finished.
//   - The worker may be silent for at most the stream's idle bound
//     (StreamIdleTimeout, or its route's), which replaces the budget's hang
//     rule once the response is a stream, and the stream lasts at most its
//     total bound (StreamTimeout). Past either, the worker's connection is
//     closed and the client's cut: a truncated stream never passes for a
//     complete one.
//   - It stops holding a render slot once it is plainly no render: an
//     event stream as soon as its relay begins, any other stream once it
//     has held its slot for StreamHold (a stalled reader of a large
//     response, or an endless one). It then gives back its worker slot
//     and its Controller permit, and counts as one of the streams instead,
//     bounded by MaxStreams, as upgrades are by MaxUpgrades. At the bound
//     an event stream is answered 503 (its worker's connection closed); any
//     other stream keeps its render slot until it ends.
//
// So N event-stream clients take no render slot, and a client that stops
// reading holds a slot for StreamHold at most, then the stream's slot and
// its memory (BufferResponseBytes at most) until the server's send timeout
// cuts it.

// Defaults of the stream bounds.
const (
	// DefaultStreamIdleTimeout is nginx's proxy_read_timeout: generous for
	// an event stream's heartbeats, which are commonly 15 to 30 s apart.
	DefaultStreamIdleTimeout = 60 * time.Second
	// DefaultStreamTimeout bounds a stream's whole life: an event stream's
	// client reconnects by itself.
	DefaultStreamTimeout = time.Hour
	// DefaultStreamHold is how long a stream that is not an event stream
	// may hold its render slot: longer than a streamed render takes.
	DefaultStreamHold = 5 * time.Second
	// DefaultMaxStreams bounds the streams that hold no render slot.
	DefaultMaxStreams = 1024
)

// StreamBounds are the bounds of one request's streamed response. A zero
// field means the Options' value; a negative one, none.
type StreamBounds struct {
	Idle  time.Duration
	Total time.Duration
}

// streams counts the streams that hold no render slot.
type streams struct {
	open    atomic.Int64
	total   atomic.Uint64
	refused atomic.Uint64 // event streams answered 503 at MaxStreams
	cut     atomic.Uint64 // closed by sluice: client gone, idle or total bound
}

// take counts one more stream, false at max.
func (s *streams) take(max int64) bool {
	for {
		n := s.open.Load()
		if n >= max {
			return false
		}
		if s.open.CompareAndSwap(n, n+1) {
			s.total.Add(1)
			return true
		}
	}
}

// streamBounds returns r's stream bounds, <= 0 meaning none.
func (p *Proxy) streamBounds(r *http.Request) (idle, total time.Duration) {
	idle, total = p.o.StreamIdleTimeout, p.o.StreamTimeout
	if p.o.SelectStreamBounds != nil && r != nil {
		b := p.o.SelectStreamBounds(r)
		if b.Idle != 0 {
			idle = b.Idle
		}
		if b.Total != 0 {
			total = b.Total
		}
	}
	return idle, total
}

// boundStreamLocked applies the stream bounds to x, whose response was
// just found to be a stream: the idle bound replaces the hang rule, and
// the total bound is armed. REQUIRES x.mu held, the response's body not
// read yet.
func (x *exchange) boundStreamLocked() {
	idle, total := x.p.streamBounds(x.in)
	x.streamIdle = -1
	switch {
	case idle > 0 && x.hung == nil:
		x.streamIdle = idle
		x.hung = time.AfterFunc(idle, x.silent)
	case idle > 0:
		x.streamIdle = idle
		x.hung.Reset(idle) // from the header on, not the budget's rule
	case x.hung != nil:
		x.hung.Stop()
	}
	if total > 0 {
		x.streamEnd = time.AfterFunc(total, func() { x.call.Abort(errStreamTimeout) })
	}
}

// detach makes x's stream give back its render slot and permit and count
// as one of the streams, unless it is over, abandoned, or the streams are
// at MaxStreams (false then).
func (x *exchange) detach() bool {
	x.mu.Lock()
	if x.detached {
		x.mu.Unlock()
		return true
	}
	if x.settled || x.state != delivered || !x.p.streams.take(int64(x.p.o.MaxStreams)) {
		x.mu.Unlock()
		return false
	}
	x.detached = true
	x.mu.Unlock()
	x.p.pool.release(x.ep)
	x.permit.Release()
	return true
}

// holdStream starts what relay owes a stream: an event stream detaches
// at once, and is refused (false) at MaxStreams; any other stream detaches
// once it has held its slot for StreamHold. stop ends the wait.
func (x *exchange) holdStream() (ok bool, stop func() bool) {
	x.mu.Lock()
	stream, sse, done := x.stream, x.sse, x.done
	x.mu.Unlock()
	if !stream || done {
		return true, nil
	}
	if sse {
		return x.detach() || x.isSettled(), nil
	}
	wait := x.p.o.StreamHold - time.Since(x.start)
	if wait <= 0 {
		x.detach()
		return true, nil
	}
	return true, time.AfterFunc(wait, func() { x.detach() }).Stop
}

// refuseStream answers 503 for an event stream refused at MaxStreams,
// and closes its worker's connection.
func (p *Proxy) refuseStream(w http.ResponseWriter, x *exchange) {
	x.call.Abort(errTooManyStreams)
	x.mu.Lock()
	x.abandonLocked()
	x.mu.Unlock()
	signal(x.space)
	p.streams.refused.Add(1)
	w.Header().Set("Retry-After", "1")
	plain(w, http.StatusServiceUnavailable, "Service Unavailable: too many streams\n")
}

func (x *exchange) isSettled() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.settled
}
