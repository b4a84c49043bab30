package admission

import "time"

// codel decides, at each dequeue, whether a request has waited too long in
// a standing queue (CoDel's judgement, applied to requests).
//
// Like CoDel it judges sojourn time, not queue length, and only a standing
// queue: the queue enters the dropping state once the sojourn of dequeued
// requests has stayed at or above target for a whole interval, so a burst
// that drains within the interval is never punished.
//
// Unlike packet CoDel it does not then drop one request per
// interval/sqrt(count). That control law relies on each drop halving a TCP
// sender's rate; request arrivals do not slow down when one is shed, so the
// queue would reach its cap long before the drop rate caught up (at 1.5x
// load it needs about 10 s). Instead, as in Facebook's adaptive queue
// timeout ("Fail at Scale"), while dropping every dequeued request whose
// sojourn is at or above target is shed, and the state lasts until the
// queue empties. Served requests then wait at most about target.
//
// Pure: time is a parameter. Not safe for concurrent use (the Controller
// calls it under its mutex).
type codel struct {
	target, interval time.Duration

	firstAbove time.Time // when sojourn may be judged standing; zero: below target
	dropping   bool
}

// shouldDrop records the sojourn of a request being dequeued at now and
// reports whether it is to be shed instead of served.
func (c *codel) shouldDrop(now time.Time, sojourn time.Duration) bool {
	if sojourn < c.target {
		if !c.dropping {
			c.firstAbove = time.Time{}
		}
		return false
	}
	if c.dropping {
		return true
	}
	if c.firstAbove.IsZero() {
		c.firstAbove = now.Add(c.interval)
		return false
	}
	if now.Before(c.firstAbove) {
		return false
	}
	c.dropping = true
	return true
}

// empty records that the queue has drained: the standing queue is gone.
func (c *codel) empty() {
	c.firstAbove = time.Time{}
	c.dropping = false
}

// standing reports whether sojourn is currently above target: a standing
// queue, during which adaptive LIFO serves newest first.
func (c *codel) standing() bool { return !c.firstAbove.IsZero() || c.dropping }
