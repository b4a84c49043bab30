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
// The target is a floor: sojourn is judged against the larger of it and
// twice the current mean service time. A queue a service time or two deep
// is what keeps every slot busy through the randomness of arrivals and
// service times (a slot that frees must find a request waiting), so it is
// not a standing queue to fight: with renders of 10 ms and a target of
// 5 ms, shedding everything older than 5 ms empties the queue between
// completions and leaves workers idle at loads they could carry (measured:
// 89% goodput at 1x offered load; in simulation one service time still
// shed 1.5% at 0.95x, two shed none). Where service times are well under
// the target, as in 004's setting, the target rules.
//
// Pure: time is a parameter. Not safe for concurrent use (the Controller
// calls it under its mutex).
type codel struct {
	target, interval time.Duration

	firstAbove time.Time // when sojourn may be judged standing; zero: below target
	dropping   bool
}

// shouldDrop records the sojourn of the request CoDel would shed, judged
// at now with queued requests waiting (it among them) and service the
// mean service time, and reports whether it is to be shed instead of
// served.
//
// A lone waiter is never shed and does not make a queue standing, as
// packet CoDel keeps its last packet: a slot is free, serving it costs no
// one anything, and shedding it would leave the slot idle.
func (c *codel) shouldDrop(now time.Time, sojourn, service time.Duration, queued int) bool {
	if sojourn < max(c.target, 2*service) || queued <= 1 {
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
