// Package reqinfo carries what sluice learns about one request from the
// handler that received it to the code that reports it: its ID, when it
// arrived, how long it waited for admission, which worker served it and for
// how long, why it was shed. The outermost handler puts an Info in the
// request's context (New); the proxy fills it in where it learns each part;
// the access log and the Server-Timing header read it.
//
// An Info is written and read by the goroutine serving its request only
// (the proxy's handler, not the exchange's), in that order, so it needs no
// lock. New makes one allocation per request: the Info, its context node
// and the bytes of its generated header values live together.
package reqinfo

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"
	"unsafe"
)

// Headers of the request ID and of the time sluice received a request.
const (
	HeaderRequestID    = "X-Request-Id"
	HeaderRequestStart = "X-Request-Start"
	HeaderTraceparent  = "Traceparent"
	HeaderServerTiming = "Server-Timing"
)

// maxIDLen bounds a request ID accepted from a trusted peer: longer, or
// with bytes outside visible ASCII, and sluice makes its own.
const maxIDLen = 128

// Info is what is known of one request. Make one with New; it is not safe
// for concurrent use (see the package doc).
type Info struct {
	// ID identifies the request in logs, to the worker and to the client:
	// a trusted peer's X-Request-Id, else 32 random hex digits.
	ID string
	// Start is when sluice received the request.
	Start time.Time
	// Queued is when the request began to wait for admission (after its
	// body was read, in front mode); zero until then. A tracing span of
	// the wait starts here, not at Start.
	Queued time.Time
	// QueueWait is the time the request waited for admission.
	QueueWait time.Duration
	// Dispatched is when the request was sent to the worker named by
	// Worker, its last; zero until then. The worker's span starts here
	// and lasts WorkerTime.
	Dispatched time.Time
	// WorkerTime is the time from dispatch to the worker's response: the
	// whole of it when buffered, its headers and first bytes when streamed.
	WorkerTime time.Duration
	// Worker is the id of the worker the request was sent to last; -1
	// for none.
	Worker int
	// Shed is the reason the request was shed; empty when it was not.
	Shed string
	// TraceID is the W3C trace id of the request's traceparent (received
	// or generated); empty for none.
	TraceID string

	idv, startv, tpv [1]string // header values, sharing buf
	buf              [32 + 18 + 55]byte
}

type ctxNode struct {
	context.Context
	info Info
}

type key struct{}

func (c *ctxNode) Value(k any) any {
	if k == (key{}) {
		return &c.info
	}
	return c.Context.Value(k)
}

// New returns a context carrying a new Info for a request received at
// start, and the Info. id is the X-Request-Id of a trusted peer, or "" to
// have one generated; an id that is too long or not visible ASCII is
// replaced too. traceparent is the request's traceparent header, whose trace
// id is recorded when valid; with generate set, a request without a valid
// one is given one (TraceParent), its trace id the request's ID when that
// is one, so that logs and traces join on it.
func New(ctx context.Context, start time.Time, id, traceparent string, generate bool) (context.Context, *Info) {
	n := &ctxNode{Context: ctx}
	i := &n.info
	i.Start, i.Worker = start, -1
	b := i.buf[:]
	if validID(id) {
		i.ID = id
	} else {
		putHex(b[:32])
		i.ID = unsafe.String(&b[0], 32)
	}
	i.idv[0] = i.ID
	// X-Request-Start: t=<microseconds since the epoch>, as New Relic,
	// Datadog and Scout read it for the time spent before the worker.
	s := strconv.AppendInt(append(b[32:32:50], "t="...), start.UnixMicro(), 10)
	i.startv[0] = unsafe.String(&s[0], len(s))
	if t, ok := TraceID(traceparent); ok {
		i.TraceID = t
	} else if generate {
		tp := b[50:50:105]
		tp = append(tp, "00-"...)
		if isHex32(i.ID) {
			tp = append(tp, i.ID...)
		} else {
			tp = tp[:35]
			putHex(tp[3:35])
		}
		tp = append(tp, '-')
		tp = tp[:52]
		putHex(tp[36:52])
		tp = append(tp, "-01"...) // sampled: sluice asks for the trace it starts
		i.tpv[0] = unsafe.String(&tp[0], len(tp))
		i.TraceID = i.tpv[0][3:35]
	}
	return n, i
}

// From returns the Info New put in ctx, or nil.
func From(ctx context.Context) *Info {
	i, _ := ctx.Value(key{}).(*Info)
	return i
}

// Traceparent returns the traceparent New generated or SetTraceparent
// set, or "".
func (i *Info) Traceparent() string { return i.tpv[0] }

// SetTraceparent makes tp the traceparent sent to the worker in place of
// the client's (a tracing front puts its own span there, so that the
// worker's spans are its children) and its trace id the request's. It
// reports whether tp is a valid traceparent; an invalid one changes
// nothing.
func (i *Info) SetTraceparent(tp string) bool {
	t, ok := TraceID(tp)
	if ok {
		i.tpv[0], i.TraceID = tp, t
	}
	return ok
}

// SetID makes id the request's ID, as New would have: for a handler that
// finds an Info made before it knew whether the peer's X-Request-Id is to
// be believed. It reports whether id was taken: one that is empty, too
// long or not visible ASCII changes nothing.
func (i *Info) SetID(id string) bool {
	if !validID(id) {
		return false
	}
	i.ID, i.idv[0] = id, id
	return true
}

// SetRequestHeaders sets, on h, the header of a request to a worker: the
// request's ID, the time sluice received it, and the traceparent it was
// given, replacing whatever the client sent under those names. The values
// are shared, not copied: h's slices for them must not be written to.
func (i *Info) SetRequestHeaders(h http.Header) {
	h[HeaderRequestID] = i.idv[:]
	h[HeaderRequestStart] = i.startv[:]
	if i.tpv[0] != "" {
		h[HeaderTraceparent] = i.tpv[:]
	}
}

// SetResponseHeader sets the request's ID on a response's header h.
func (i *Info) SetResponseHeader(h http.Header) { h[HeaderRequestID] = i.idv[:] }

// AppendServerTiming appends the Server-Timing value of the request to b:
// its queue wait and, once dispatched, its worker time, in milliseconds
// (queue;dur=1.2, worker;dur=35.0).
func (i *Info) AppendServerTiming(b []byte) []byte {
	b = appendMillis(append(b, "queue;dur="...), i.QueueWait)
	if i.Worker >= 0 {
		b = appendMillis(append(b, ", worker;dur="...), i.WorkerTime)
	}
	return b
}

func appendMillis(b []byte, d time.Duration) []byte {
	return strconv.AppendFloat(b, float64(d.Microseconds())/1000, 'f', 1, 64)
}

// TraceID returns the trace id of a W3C traceparent (version-traceid-
// parentid-flags), and whether tp is a valid one. Versions other than 00
// may be longer (the spec's forward compatibility).
func TraceID(tp string) (string, bool) {
	if len(tp) < 55 || tp[2] != '-' || tp[35] != '-' || tp[52] != '-' ||
		!isHex(tp[:2]) || tp[:2] == "ff" || !isHex(tp[3:35]) || !isHex(tp[36:52]) || !isHex(tp[53:55]) ||
		tp[3:35] == zeros[:32] || tp[36:52] == zeros[:16] ||
		(tp[:2] == "00" && len(tp) != 55) || (len(tp) > 55 && tp[55] != '-') {
		return "", false
	}
	return tp[3:35], true
}

const zeros = "00000000000000000000000000000000"

func isHex32(s string) bool { return len(s) == 32 && isHex(s) && s != zeros }

// isHex reports whether s is lowercase hex digits, as trace context
// requires.
func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func validID(id string) bool {
	if id == "" || len(id) > maxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] > '~' {
			return false
		}
	}
	return true
}

// putHex fills b (an even length, at most 32) with random hex digits from
// math/rand/v2's per-thread generator: fast, lock-free, unpredictable
// enough for an ID (ChaCha8 seeded by the runtime), not a secret.
func putHex(b []byte) {
	const digits = "0123456789abcdef"
	var u uint64
	for j := range b {
		if j%16 == 0 {
			u = rand.Uint64()
		}
		b[j] = digits[u&15]
		u >>= 4
	}
}
