package admission

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"
)

// Middleware wraps http.Handlers with admission control. Only Controller is
// required; the zero value of every other field has a default. A
// Middleware must not be changed after its first Wrap.
type Middleware struct {
	Controller *Controller

	// Classify maps a request to its admission Request (priority, tenant,
	// cost, deadline). nil treats every request alike: Critical, cost 1, no
	// deadline.
	// When set, the Request is also stored in the request's context (see
	// FromContext) so handlers can propagate it.
	Classify func(*http.Request) Request

	// Rejected writes the response for a shed request. nil means
	// WriteShed with the Controller's RetryAfterFor the refusal.
	Rejected func(w http.ResponseWriter, r *http.Request, reason Reason)

	// Observe, when set, is told how each request left the wait for its
	// slot: admitted (err nil), shed (an error ShedReason reads) or gone
	// (the client's context error), with when it began waiting and for how
	// long: what a log line, a Server-Timing header or a tracing span (the
	// sluice/otel module) reports. It runs on the request's goroutine,
	// before Rejected or next. nil reads no clock.
	Observe func(r *http.Request, queued time.Time, wait time.Duration, err error)
}

// Wrap returns next behind admission control. The slot is held until
// next.ServeHTTP returns — the response is complete, streamed bodies
// included — and is given back on panic too (the panic continues). A
// request whose client hung up while it waited never reaches next, and
// gets no response. A request with a deadline (Request.Deadline, from
// Classify: a route timeout or a trusted Sluice-Timeout) reaches next with
// that deadline on its context, cancelled when next returns, so that the
// handler and the client transport see and forward it.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	c := m.Controller
	if c == nil {
		panic("admission: Middleware.Controller is nil")
	}
	rejected := m.Rejected
	classify, observe := m.Classify, m.Observe
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req Request
		if classify != nil {
			req = classify(r)
			r = r.WithContext(context.WithValue(r.Context(), requestKey{}, req))
		}
		var queued time.Time
		if observe != nil {
			queued = time.Now()
		}
		p, err := c.Acquire(r.Context(), req)
		if observe != nil {
			observe(r, queued, time.Since(queued), err)
		}
		if err != nil {
			if reason, ok := ShedReason(err); ok {
				if rejected == nil {
					WriteShed(w, reason, c.RetryAfterFor(err))
				} else {
					rejected(w, r, reason)
				}
			}
			return
		}
		if !req.Deadline.IsZero() {
			// After Acquire, not before: a queued request past its deadline
			// is shed by the controller (503), not dropped for a done
			// context.
			ctx, cancel := context.WithDeadline(r.Context(), req.Deadline)
			defer cancel()
			r = r.WithContext(ctx)
		}
		completed := false
		defer func() {
			if !completed {
				p.Release()
				return
			}
			p.Done()
		}()
		next.ServeHTTP(w, r)
		completed = true
	})
}

// Wrap is shorthand for (&Middleware{Controller: c}).Wrap(next).
func (c *Controller) Wrap(next http.Handler) http.Handler {
	return (&Middleware{Controller: c}).Wrap(next)
}

type requestKey struct{}

// FromContext returns the admission Request a Middleware with a Classify
// func stored in ctx, so that a handler can forward its priority, tenant
// and deadline downstream.
func FromContext(ctx context.Context) (Request, bool) {
	r, ok := ctx.Value(requestKey{}).(Request)
	return r, ok
}

// RetryAfter suggests how long a shed client should wait before trying
// again: the time the current queue needs to drain at the smoothed latency,
// in whole seconds, at least 1 and at most 60. It does not depend on why
// the request was shed: whatever the reason, a retry is served once the
// queue ahead of it has drained.
func (c *Controller) RetryAfter() time.Duration {
	st := c.state.Load()
	lat := math.Float64frombits(c.latency.Load())
	queued := 0
	if c.q != nil {
		queued = int(c.q.size.Load())
	}
	d := time.Duration(lat * float64(queued+1) / float64(max(limitOf(st), 1)))
	secs := math.Ceil(d.Seconds())
	return time.Duration(min(max(secs, 1), 60)) * time.Second
}

// WriteShed writes sluice's shed response: 503 (429 for ReasonTenant, a
// tenant over its fair share while others are served, and ReasonQuota, a
// tenant over its rate quota), Retry-After in whole
// seconds (at least 1), a Sluice-Shed header naming the reason, and a short
// text body of declared length.
//
// Under overload nearly every answer is this one, so it allocates nothing:
// the header values are built once and shared by every shed response. A
// wrapper may replace or add to them (Header.Set, Header.Add), but must
// not write into the slices it finds.
func WriteShed(w http.ResponseWriter, reason Reason, retryAfter time.Duration) {
	code, body, length := http.StatusServiceUnavailable, shedBody, shedLength
	if reason == ReasonTenant || reason == ReasonQuota {
		code, body, length = http.StatusTooManyRequests, tenantBody, tenantLength
	}
	secs := int64(math.Ceil(retryAfter.Seconds()))
	if secs < 1 {
		secs = 1
	}
	h := w.Header()
	h["Content-Type"] = shedContentType
	h["X-Content-Type-Options"] = shedNoSniff
	// Declared, the length tells a compressing wrapper at once that the
	// body is too short to compress: it need not hold it to find out.
	h["Content-Length"] = length
	if secs < int64(len(retryAfterValues)) {
		h["Retry-After"] = retryAfterValues[secs]
	} else {
		h["Retry-After"] = []string{strconv.FormatInt(secs, 10)}
	}
	if reason < numReasons {
		h[HeaderShed] = shedValues[reason]
	} else {
		h[HeaderShed] = []string{reason.String()}
	}
	w.WriteHeader(code)
	_, _ = w.Write(body) // a Writer may not modify it (io.Writer)
}

// The header values and bodies of WriteShed, never written to. Each
// header value has a capacity of 1, so that Header.Add appends to a copy.
var (
	shedBody         = []byte("Service Busy\n")
	tenantBody       = []byte("Too Many Requests\n")
	shedLength       = []string{strconv.Itoa(len(shedBody))}
	tenantLength     = []string{strconv.Itoa(len(tenantBody))}
	shedContentType  = []string{"text/plain; charset=utf-8"}
	shedNoSniff      = []string{"nosniff"}
	retryAfterValues = func() (vs [61][]string) { // RetryAfter's range, 1 to 60 s
		for i := range vs {
			vs[i] = []string{strconv.Itoa(i)}
		}
		return vs
	}()
	shedValues = func() (vs [numReasons][]string) {
		for r := range vs {
			vs[r] = []string{Reason(r).String()}
		}
		return vs
	}()
)
