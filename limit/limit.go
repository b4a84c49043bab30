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
	// Weight is how many completed requests the sample stands for; 0
	// means 1. A caller that times one request in k (the admission
	// Controller does at high rates) sets it to k. Algorithms count
	// completions by weight and take RTT statistics over the samples.
	Weight int
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
	// MeanInflight is the mean in-flight count over the window, from
	// periodic readings (not from every request); 0 when not measured.
	MeanInflight float64
	// Queued is the highest number of requests seen waiting for a slot
	// during the window.
	Queued int
	// Runnable is the mean number of goroutines that were ready to run but
	// waiting for a P over the window (see Probe); NaN when unknown.
	Runnable float64
	// CPUBusy is the CPU time the process used during the window over the
	// window's length times CPUs: about 1 when the usable CPUs were fully
	// used; NaN when unknown. It may exceed 1 briefly.
	CPUBusy float64
	// CPUs is how many CPUs the process may use (GOMAXPROCS, or a lower
	// cgroup quota); 0 when unknown.
	CPUs float64
}

// Paced is implemented by algorithms designed for a particular sample
// window; a caller that has no window configured uses Window's.
type Paced interface {
	Window() time.Duration
}

// Algorithm computes a concurrency limit. Implementations are safe for
// concurrent use: Observe is called from every goroutine that completes a
// timed request (a sample of them, weighted, at high rates: see
// Sample.Weight).
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
