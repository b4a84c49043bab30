package client

import (
	"maps"
	"time"
)

// Stats is a snapshot of a Transport's counters, for metrics. Counters
// only grow; HostStats describe the moment of the snapshot.
type Stats struct {
	Requests      uint64 // RoundTrip calls
	Attempts      uint64 // attempts handed to the base RoundTripper
	Retries       uint64 // retries the budget granted
	RetriesDenied uint64 // retries the budget refused: the last result was returned instead
	Throttled     uint64 // attempts rejected locally by adaptive throttling
	CircuitOpen   uint64 // attempts rejected locally by a circuit breaker
	Expired       uint64 // attempts not sent because the deadline left no time

	// Hosts holds the throttle and breaker of every destination host
	// (URL.Host, lower-cased) used recently.
	Hosts map[string]HostStats
}

// HostStats describes one destination host.
type HostStats struct {
	Breaker BreakerState
	// Requests and Accepts are the adaptive throttle's counts over its
	// window; RejectProbability is the chance the next request is
	// rejected locally.
	Requests, Accepts int64
	RejectProbability float64
}

// Stats returns a snapshot of t's counters and per-host state. It is safe
// to call concurrently with RoundTrip.
func (t *Transport) Stats() Stats {
	t.init()
	now := time.Now()
	t.mu.Lock()
	hosts := maps.Clone(t.mu.hosts)
	t.mu.Unlock()
	s := Stats{
		Requests:      t.requests.Load(),
		Attempts:      t.attempts.Load(),
		Retries:       t.retries.Load(),
		RetriesDenied: t.retriesDenied.Load(),
		Throttled:     t.throttled.Load(),
		CircuitOpen:   t.circuitOpen.Load(),
		Expired:       t.expired.Load(),
		Hosts:         make(map[string]HostStats, len(hosts)),
	}
	for name, h := range hosts {
		s.Hosts[name] = h.stats(now)
	}
	return s
}
