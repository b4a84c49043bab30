package admission

import (
	"fmt"
	"strings"
	"time"
)

// Priority is a request's criticality, after Google SRE's classes. Higher
// values are more important; the zero value is Critical, the default for
// serving traffic.
type Priority int8

const (
	Sheddable     Priority = -2 // best effort: shed first
	SheddablePlus Priority = -1 // batch work that can be retried later
	Critical      Priority = 0  // default for user-facing requests
	CriticalPlus  Priority = 1  // the most important requests: shed last
)

// numPriorities is the number of classes; classIndex maps a Priority to
// 0 (CriticalPlus) .. 3 (Sheddable).
const numPriorities = 4

func (p Priority) classIndex() int { return int(CriticalPlus - p.clamp()) }

func (p Priority) clamp() Priority {
	if p > CriticalPlus {
		return CriticalPlus
	}
	if p < Sheddable {
		return Sheddable
	}
	return p
}

// priorityNames are the header forms of the classes, by classIndex: the
// one place they are spelled.
var priorityNames = [numPriorities]string{"critical-plus", "critical", "sheddable-plus", "sheddable"}

// String returns the header form: critical-plus, critical, sheddable-plus or
// sheddable.
func (p Priority) String() string { return priorityNames[p.classIndex()] }

// ParsePriority parses the header form of a priority (see String).
func ParsePriority(s string) (Priority, error) {
	for i, name := range priorityNames {
		if s == name {
			return CriticalPlus - Priority(i), nil
		}
	}
	return Critical, fmt.Errorf("admission: unknown priority %q (want %s)", s, priorityList)
}

// priorityList is the header forms for an error message: "critical-plus,
// critical, sheddable-plus or sheddable".
var priorityList = strings.Join(priorityNames[:numPriorities-1], ", ") + " or " + priorityNames[numPriorities-1]

// Request describes work asking for admission. The zero value is a
// Critical request of cost 1 with no tenant and no deadline.
type Request struct {
	// Priority is the request's class.
	Priority Priority
	// Tenant is the fairness key (a customer, API key or client address).
	// Empty means the shared default tenant.
	Tenant string
	// Cost is how many slots the request occupies; 0 or less means 1, and
	// more than MaxCost counts as MaxCost. A request dearer than the whole
	// limit runs alone.
	Cost int
	// Deadline is when the caller stops waiting for the answer; zero means
	// none. A queued request that can no longer finish in time is shed.
	Deadline time.Time
	// Untimed says the caller will not give the slot back with
	// Permit.Done: it calls Release, or DoneSample with its own timing (a
	// proxy timing the exchange with its upstream). Acquire then never
	// reads the clock for it, where a timed request is timed at a low rate
	// (all of them) and at a high one (a sample: see
	// Options.SampleWindow); Done on such a Permit gives the slot back
	// without a sample, as Release does.
	Untimed bool
	// Quota names the rate limit of the Controller's Quota that applies:
	// "" the default one, another name a route's own (Rule.Quota).
	Quota string
}

func (r *Request) cost() int64 {
	if r.Cost <= 0 {
		return 1
	}
	return int64(min(r.Cost, MaxCost))
}
