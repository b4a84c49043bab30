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

	// Queue bookkeeping (fairQueue): class index, flow, virtual start tag
	// and the links of the flow's list.
	class      int8
	flow       *flow
	start      float64
	prev, next *waiter
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
