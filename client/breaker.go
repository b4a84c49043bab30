package client

import (
	"fmt"
	"time"
)

// BreakerState is the state of a host's circuit breaker.
type BreakerState int8

const (
	// BreakerClosed: requests flow; failures are counted.
	BreakerClosed BreakerState = iota
	// BreakerOpen: requests fail at once with ErrCircuitOpen until the cooldown
	// has passed.
	BreakerOpen
	// BreakerHalfOpen: a few probe requests are let through; the first success
	// closes the breaker, a failure opens it again.
	BreakerHalfOpen
)

func (s BreakerState) String() string {
	switch s {
	case BreakerClosed:
		return "closed"
	case BreakerOpen:
		return "open"
	case BreakerHalfOpen:
		return "half-open"
	}
	return fmt.Sprintf("BreakerState(%d)", int(s))
}

// breakerConfig holds a breaker's thresholds; a rule whose threshold is
// <= 0 is off.
type breakerConfig struct {
	failures   int     // consecutive failures that open the breaker
	ratio      float64 // failure ratio over the window that opens it...
	minVolume  int     // ...once the window holds at least this many results
	cooldown   time.Duration
	probes     int // requests let through at once while half-open
	windowSize time.Duration
}

// breaker is a circuit breaker for one host. Results reported with a ticket
// from an earlier state are ignored, so a slow request sent before the
// breaker opened cannot close it, and only probes decide a half-open
// breaker. Time is a parameter. Not safe for concurrent use.
type breaker struct {
	cfg         breakerConfig
	st          BreakerState
	gen         uint64 // incremented on every transition
	openedAt    time.Time
	consecutive int
	probing     int // probes in flight while half-open
	win         window
}

// ticket ties a result to the breaker generation that let it through.
type ticket struct {
	gen   uint64
	probe bool
}

func newBreaker(cfg breakerConfig) breaker {
	return breaker{cfg: cfg, win: newWindow(cfg.windowSize, 10)}
}

// state returns the state at now: an open breaker whose cooldown has
// passed is half-open.
func (b *breaker) state(now time.Time) BreakerState {
	if b.st == BreakerOpen && !now.Before(b.openedAt.Add(b.cfg.cooldown)) {
		b.to(BreakerHalfOpen, now)
	}
	return b.st
}

// allow reports whether a request may be sent at now, and the ticket to
// report its result with.
func (b *breaker) allow(now time.Time) (ticket, bool) {
	switch b.state(now) {
	case BreakerOpen:
		return ticket{}, false
	case BreakerHalfOpen:
		if b.probing >= max(b.cfg.probes, 1) {
			return ticket{}, false
		}
		b.probing++
		return ticket{gen: b.gen, probe: true}, true
	}
	return ticket{gen: b.gen}, true
}

// cancel returns a ticket whose request was not sent after all.
func (b *breaker) cancel(t ticket) {
	if t.probe && t.gen == b.gen {
		b.probing--
	}
}

// record reports the result of a request let through with t, and returns
// the state after it.
func (b *breaker) record(now time.Time, t ticket, failed bool) BreakerState {
	if t.gen != b.gen {
		return b.st
	}
	if t.probe {
		b.probing--
		if failed {
			b.to(BreakerOpen, now)
		} else {
			b.to(BreakerClosed, now)
		}
		return b.st
	}
	if failed {
		b.consecutive++
		b.win.add(now, 1, 1)
	} else {
		b.consecutive = 0
		b.win.add(now, 1, 0)
	}
	if failed && b.tripped(now) {
		b.to(BreakerOpen, now)
	}
	return b.st
}

func (b *breaker) tripped(now time.Time) bool {
	if b.cfg.failures > 0 && b.consecutive >= b.cfg.failures {
		return true
	}
	if b.cfg.ratio <= 0 {
		return false
	}
	total, failures := b.win.sum(now)
	return total >= int64(max(b.cfg.minVolume, 1)) && float64(failures) >= b.cfg.ratio*float64(total)
}

func (b *breaker) to(s BreakerState, now time.Time) {
	b.st = s
	b.gen++
	b.probing = 0
	b.consecutive = 0
	b.win.reset()
	if s == BreakerOpen {
		b.openedAt = now
	}
}
