package client

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/admission"
)

type priorityKey struct{}

// WithPriority returns a context whose outbound requests through a
// Transport carry Sluice-Priority: p. It takes precedence over the priority
// of an inbound request (admission.FromContext).
func WithPriority(ctx context.Context, p admission.Priority) context.Context {
	return context.WithValue(ctx, priorityKey{}, p)
}

// priorityOf returns the priority ctx asks outbound requests to carry.
func priorityOf(ctx context.Context) (admission.Priority, bool) {
	if p, ok := ctx.Value(priorityKey{}).(admission.Priority); ok {
		return p, true
	}
	if r, ok := admission.FromContext(ctx); ok {
		return r.Priority, true
	}
	return 0, false
}

// budgetOf returns the time left before ctx's deadline, in whole
// milliseconds (rounded down: a callee must not believe it has more time
// than it has), and whether ctx has a deadline at all.
func budgetOf(ctx context.Context, now time.Time) (ms int64, ok bool) {
	d, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return d.Sub(now).Milliseconds(), true
}

// propagate sets the Sluice headers ctx asks for on h. The context is the
// source of truth: a header the caller set is replaced when ctx says
// something and kept when it does not.
func propagate(h http.Header, prio admission.Priority, hasPrio bool, ms int64, hasDeadline bool) {
	vals := make([]string, 2) // one allocation for both values
	if hasPrio {
		vals[0] = prio.String()
		h[admission.HeaderPriority] = vals[0:1:1]
	}
	if hasDeadline {
		vals[1] = strconv.FormatInt(ms, 10)
		h[admission.HeaderTimeout] = vals[1:2:2]
	}
}
