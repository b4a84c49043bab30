package admission

import (
	"errors"
	"fmt"
	"time"
)

// Reason says why a request was not admitted. Its string form is the value
// of the Sluice-Shed response header.
type Reason uint8

const (
	ReasonNone         Reason = iota
	ReasonQueueFull           // the wait queue was full
	ReasonQueueTimeout        // waited longer than the queue timeout
	ReasonSaturated           // the saturation signal was above its maximum
	ReasonCoDel               // the queue's sojourn time stayed above target
	ReasonDeadline            // the request could not finish before its deadline
	ReasonPriority            // displaced by a higher-priority request
	ReasonShutdown            // the controller is closed
	ReasonLimit               // over the limit with queueing disabled
	ReasonTenant              // the tenant is over its fair share while others wait (429)
	ReasonQuota               // the tenant is over its rate quota (429; see Quota)
	numReasons
)

var reasonNames = [numReasons]string{
	ReasonNone:         "none",
	ReasonQueueFull:    "queue-full",
	ReasonQueueTimeout: "queue-timeout",
	ReasonSaturated:    "saturated",
	ReasonCoDel:        "codel",
	ReasonDeadline:     "deadline",
	ReasonPriority:     "priority",
	ReasonShutdown:     "shutdown",
	ReasonLimit:        "limit",
	ReasonTenant:       "tenant",
	ReasonQuota:        "quota",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return fmt.Sprintf("reason(%d)", uint8(r))
}

// parseReason is String's inverse, for decoding.
func parseReason(name string) (Reason, bool) {
	for r := ReasonQueueFull; r < numReasons; r++ {
		if reasonNames[r] == name {
			return r, true
		}
	}
	return ReasonNone, false
}

// Reasons lists every shed reason, for metrics that want a label per reason.
func Reasons() []Reason {
	rs := make([]Reason, 0, numReasons-1)
	for r := ReasonQueueFull; r < numReasons; r++ {
		rs = append(rs, r)
	}
	return rs
}

// ShedError is returned by Controller.Acquire when a request is shed. The
// errors are preallocated, one per reason, so shedding does not allocate.
type ShedError struct {
	Reason Reason
	// RetryAfter, when not zero, is when the request would be accepted,
	// in whole seconds: a quota's answer (ReasonQuota). Zero leaves the
	// suggestion to Controller.RetryAfter.
	RetryAfter time.Duration
}

func (e *ShedError) Error() string { return "admission: shed: " + e.Reason.String() }

var shedErrors = func() [numReasons]*ShedError {
	var es [numReasons]*ShedError
	for r := range es {
		es[r] = &ShedError{Reason: Reason(r)}
	}
	return es
}()

func shed(r Reason) error { return shedErrors[r] }

// ShedReason returns the reason carried by err, and false when err is not a
// shed error.
func ShedReason(err error) (Reason, bool) {
	// Acquire returns its shed errors as they are: a type assertion finds
	// them, and nil, without errors.As's reflection and allocation.
	if err == nil {
		return ReasonNone, false
	}
	if se, ok := err.(*ShedError); ok {
		return se.Reason, true
	}
	var se *ShedError
	if errors.As(err, &se) {
		return se.Reason, true
	}
	return ReasonNone, false
}

// ErrClosed is wrapped by the shed error a closed controller returns:
// errors.Is(err, ErrClosed) holds for it.
var ErrClosed = errors.New("admission: controller closed")

func (e *ShedError) Is(target error) bool { return target == ErrClosed && e.Reason == ReasonShutdown }
