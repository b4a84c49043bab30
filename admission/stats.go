package admission

import "time"

// Stats is a snapshot of a Controller's state and counters.
type Stats struct {
	// Limit is the current concurrency limit.
	Limit int `json:"limit"`
	// Inflight is the number of slots in use. For an instant it may also
	// count slots a newcomer took optimistically and is giving back
	// because they did not fit; no work runs in them.
	Inflight int `json:"inflight"`
	// Queued is the number of requests waiting for a slot.
	Queued int `json:"queued"`
	// Saturation is the last value of the saturation signal in [0, 1], or -1
	// when the controller has no signal or it has no value yet.
	Saturation float64 `json:"saturation"`
	// Latency is the smoothed (EWMA) service time of completed requests.
	Latency time.Duration `json:"latencyNanos"`

	// Admitted counts requests admitted, Queued or not.
	Admitted uint64 `json:"admitted"`
	// AdmittedAfterWait counts the admitted requests that waited in the queue.
	AdmittedAfterWait uint64 `json:"admittedAfterWait"`
	// Cancelled counts queued requests whose caller gave up (context done).
	Cancelled uint64 `json:"cancelled"`
	// Shed counts shed requests by reason (keys are Reason strings).
	Shed map[string]uint64 `json:"shed"`
}
