package admission

import "time"

// waiter is a request waiting in the queue. It is created on the slow path
// only; the fast path allocates nothing.
type waiter struct {
	req      Request
	cost     int64
	enqueued time.Time

	// ready is closed once the waiter's fate is decided; err is written,
	// under Controller.mu, before the close: nil means granted.
	ready chan struct{}
	err   error
	done  bool

	// Links for the intrusive lists of the queue disciplines.
	prev, next *waiter
}

// queue orders the waiters. It decides who goes next and who is refused at
// the door; the Controller decides when (the limit) and owns the waiters'
// outcomes. Every method is called with Controller.mu held.
type queue interface {
	// push adds w. It returns ReasonNone when w was queued, and then
	// optionally a displaced waiter that the Controller sheds with
	// ReasonPriority; otherwise w was refused for the returned reason.
	push(w *waiter) (displaced *waiter, refused Reason)
	// front returns the waiter to grant next, or nil when empty.
	front() *waiter
	// remove takes w out of the queue. w is in the queue.
	remove(w *waiter)
	len() int
}

// waitList is an intrusive doubly-linked FIFO list: O(1) push, pop and
// removal from the middle (a waiter whose client hung up).
type waitList struct {
	head, tail *waiter
	n          int
}

func (l *waitList) pushBack(w *waiter) {
	w.prev, w.next = l.tail, nil
	if l.tail != nil {
		l.tail.next = w
	} else {
		l.head = w
	}
	l.tail = w
	l.n++
}

func (l *waitList) remove(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		l.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		l.tail = w.prev
	}
	w.prev, w.next = nil, nil
	l.n--
}

// fifo is the seed's discipline: one bounded first-in, first-out queue.
type fifo struct {
	list waitList
	max  int
}

var _ queue = (*fifo)(nil)

func (q *fifo) push(w *waiter) (*waiter, Reason) {
	if q.list.n >= q.max {
		return nil, ReasonQueueFull
	}
	q.list.pushBack(w)
	return nil, ReasonNone
}

func (q *fifo) front() *waiter   { return q.list.head }
func (q *fifo) remove(w *waiter) { q.list.remove(w) }
func (q *fifo) len() int         { return q.list.n }
