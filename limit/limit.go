package limit

import "time"

// Sample is one completed request.
type Sample struct {
	// Now is when the request completed.
	Now time.Time
	// RTT is how long the request held its slot (service time, not queueing).
	RTT time.Duration
	// Inflight is the number of requests in flight when this one completed,
	// itself included.
	Inflight int
	// Dropped reports that the request failed because of overload: it timed
	// out, or a downstream shed it. Algorithms treat it as a congestion
	// signal whatever its RTT.
	Dropped bool
}

// Window is the periodic observation, delivered once every sample window.
type Window struct {
	// Now is the end of the window.
	Now time.Time
	// Saturation is the process's saturation signal in [0, 1] (see Signal);
	// NaN when unknown.
	Saturation float64
	// Inflight is the number of requests in flight at Now.
	Inflight int
	// PeakInflight is the highest in-flight count seen during the window.
	PeakInflight int
}

// Algorithm computes a concurrency limit. Implementations are safe for
// concurrent use: Observe is called from every goroutine that completes a
// request.
type Algorithm interface {
	// Limit returns the current limit, always >= 1.
	Limit() int
	// Observe records a completed request and returns the new limit.
	Observe(s Sample) int
	// Tick closes a sample window and returns the new limit.
	Tick(w Window) int
}

// Signal reports how saturated the process is, in [0, 1]: the Go analogue of
// Node.js's event-loop utilization. Saturation must be cheap (an atomic
// load): it is read on the admission slow path.
type Signal interface {
	Saturation() float64
}
