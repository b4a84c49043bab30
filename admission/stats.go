package admission

import (
	"encoding/json"
	"fmt"
	"time"
)

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
	// QueueBound is the most that may wait: Options.QueueSize, or for a
	// queue sized to the service the size it has now. Zero: no queue.
	QueueBound int `json:"queueBound"`
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
	// Shed counts shed requests by reason: Shed[ReasonCoDel].
	Shed ShedCounts `json:"shed"`
	// TolerateUntil is the end of the last Tolerate, past or to come;
	// zero when there was none (or no CoDel).
	TolerateUntil time.Time `json:"tolerateUntil,omitzero"`
	// TolerateBound is the wait the last Tolerate allowed until then.
	TolerateBound time.Duration `json:"tolerateBound,omitzero"`
}

// ShedCounts counts shed requests, indexed by Reason. It is an array, so a
// Stats snapshot allocates nothing; in JSON it is an object keyed by the
// reasons' strings ({"queue-full": 2, ...}), ReasonNone left out.
type ShedCounts [numReasons]uint64

// Total returns the requests shed for any reason.
func (s *ShedCounts) Total() uint64 {
	var n uint64
	for _, v := range s {
		n += v
	}
	return n
}

// MarshalJSON writes the counts as an object keyed by reason.
func (s ShedCounts) MarshalJSON() ([]byte, error) {
	m := make(map[string]uint64, numReasons-1)
	for r := ReasonQueueFull; r < numReasons; r++ {
		m[r.String()] = s[r]
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads what MarshalJSON writes; an unknown reason is an
// error.
func (s *ShedCounts) UnmarshalJSON(b []byte) error {
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	*s = ShedCounts{}
	for k, v := range m {
		r, ok := parseReason(k)
		if !ok {
			return fmt.Errorf("admission: unknown shed reason %q", k)
		}
		s[r] = v
	}
	return nil
}
