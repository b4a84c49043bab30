package client

import (
	"math"
	"time"
)

// throttle is Google SRE's adaptive client-side throttling for one host:
// over the window it counts requests (every one the application asked for,
// locally rejected ones included) and accepts (those the backend did not
// refuse), and rejects locally with probability
//
//	max(0, (requests - k*accepts) / (requests + 1))
//
// capped at maxP. Below minRate requests per second over the window it never
// rejects: with a handful of requests, one failure would otherwise shut a
// quiet client out for the whole window (Envoy's admission control learned
// this).
//
// The cap is what lets a client recover. Rejected requests count as
// requests, so a client that sends a fraction q of its requests to a host
// that accepts them all settles at p = 1 - 2q: q only doubles per window.
// Uncapped, p reaches 0.999 in a one-minute total outage at 10 requests a
// second, and the client needs seven windows (14 minutes) to send normally
// again; capped at 0.8 (Envoy's default), a window and a half.
//
// Time and randomness are parameters. Not safe for concurrent use.
type throttle struct {
	k       float64 // <= 0: never reject
	maxP    float64 // the highest rejection probability
	minRate float64 // requests per second under which nothing is rejected
	win     window
}

func newThrottle(k, maxP float64, period time.Duration, minRate float64) throttle {
	return throttle{k: k, maxP: maxP, minRate: minRate, win: newWindow(period, 60)}
}

// probability returns the chance a request at now is rejected.
func (t *throttle) probability(now time.Time) float64 {
	if t.k <= 0 {
		return 0
	}
	requests, accepts := t.win.sum(now)
	if float64(requests) < t.minRate*t.win.period().Seconds() {
		return 0
	}
	p := (float64(requests) - t.k*float64(accepts)) / float64(requests+1)
	return math.Min(math.Max(p, 0), t.maxP)
}

// allow counts a request at now and reports whether it may be sent, and
// the rejection probability it was judged by; rnd is uniform in [0, 1). The
// request is counted before it is sent so that concurrent requests see each
// other.
func (t *throttle) allow(now time.Time, rnd float64) (ok bool, p float64) {
	p = t.probability(now)
	t.win.add(now, 1, 0)
	return rnd >= p, p
}

// accepted counts an accept for a request counted by allow.
func (t *throttle) accepted(now time.Time) { t.win.add(now, 0, 1) }

// probe counts a request sent whatever the probability (a circuit
// breaker's probe).
func (t *throttle) probe(now time.Time) { t.win.add(now, 1, 0) }

// reset forgets the counts, which describe an outage that is over.
func (t *throttle) reset() { t.win.reset() }
