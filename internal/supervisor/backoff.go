package supervisor

import "time"

// backoff is the restart delay policy: exponential from min to max, minus a
// random fraction of up to jitter. It is pure: the caller supplies the
// failure count and the random number.
type backoff struct {
	min, max time.Duration
	jitter   float64 // in [0, 1]
}

// delay returns how long to wait before restarting a slot that has failed
// failures times in a row (0 for the first failure), given r in [0, 1).
// The result lies in (d*(1-jitter), d] where d = min(min*2^failures, max).
func (b backoff) delay(failures int, r float64) time.Duration {
	d := b.min
	for i := 0; i < failures && d < b.max; i++ {
		d *= 2
	}
	d = min(d, b.max)
	return d - time.Duration(float64(d)*b.jitter*r)
}

// crashGuard counts unexpected exits in a sliding window. It is pure: the
// caller supplies the time. The zero value with max 0 trips on the first
// exit; a negative max never trips.
type crashGuard struct {
	max    int
	window time.Duration
	exits  []time.Time // within the window, oldest first
}

// record notes an exit at now and reports whether more than max exits now
// lie within the window ending at now.
func (g *crashGuard) record(now time.Time) bool {
	if g.max < 0 {
		return false
	}
	g.exits = append(g.exits, now)
	cut := 0
	for cut < len(g.exits) && now.Sub(g.exits[cut]) >= g.window {
		cut++
	}
	g.exits = append(g.exits[:0], g.exits[cut:]...)
	return len(g.exits) > g.max
}

// reset forgets every exit.
func (g *crashGuard) reset() { g.exits = g.exits[:0] }
