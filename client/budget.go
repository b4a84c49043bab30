package client

import "time"

// budget bounds retries for a whole Transport, as Envoy's retry budget and
// Google SRE's per-client budget do: a retry is allowed while the retries
// over the window stay under ratio times the requests, or under minRate
// retries a second, whichever is more, so that a quiet client can still
// retry. Without it every layer's attempts multiply and retries alone can
// keep an overloaded backend overloaded. A floor counted in retries per
// second rather than in retries in flight (Envoy's) keeps a fleet of
// sequential clients, each with at most one retry in flight, bounded too.
// Time is a parameter. Not safe for concurrent use.
type budget struct {
	ratio   float64
	minRate float64
	win     window
}

func newBudget(ratio, minRate float64, period time.Duration) budget {
	return budget{ratio: ratio, minRate: minRate, win: newWindow(period, 10)}
}

// request counts an original request (not a retry).
func (b *budget) request(now time.Time) { b.win.add(now, 1, 0) }

// tryRetry reports whether one more retry fits at now, and if so counts it.
func (b *budget) tryRetry(now time.Time) bool {
	requests, retries := b.win.sum(now)
	limit := max(b.ratio*float64(requests), b.minRate*b.win.period().Seconds())
	if float64(retries+1) > limit {
		return false
	}
	b.win.add(now, 0, 1)
	return true
}
