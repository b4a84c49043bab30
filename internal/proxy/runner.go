package proxy

import (
	"sync"
	"time"
)

// runners keeps the goroutines of finished exchanges for the next ones.
// An exchange's goroutine grows its stack (reading a response goes deep
// into net/http) and a new goroutine starts small again: copying stacks
// was a visible share of a loaded front's CPU. A runner that finds no work
// for runnerIdle exits, so that the pool shrinks back after a burst and
// nothing is left behind when the Proxy is dropped.
//
// The zero value is ready. Safe for concurrent use.
type runners struct {
	mu   sync.Mutex
	idle []*runner // parked, the most recently parked last
}

// runner is one pooled goroutine; next hands it its next task (nil: exit).
type runner struct {
	next chan task // capacity 1: the hand-off never blocks
}

// task is what a runner runs: an exchange.
type task interface{ run() }

var _ task = (*exchange)(nil)

const (
	// runnerIdle is how long a runner waits for work before it exits.
	runnerIdle = 5 * time.Second
	// maxIdleRunners bounds the parked runners: the exchanges of a burst
	// beyond it end their goroutines when done.
	maxIdleRunners = 1024
)

// start runs x.run on a parked runner, or on a new goroutine when none is
// parked.
func (rs *runners) start(x task) {
	rs.mu.Lock()
	if n := len(rs.idle); n > 0 {
		r := rs.idle[n-1]
		rs.idle[n-1] = nil
		rs.idle = rs.idle[:n-1]
		rs.mu.Unlock()
		r.next <- x
		return
	}
	rs.mu.Unlock()
	go rs.loop(x)
}

// loop runs x, then each task it is handed, until it waits runnerIdle
// for one or the pool is full.
func (rs *runners) loop(x task) {
	r := &runner{next: make(chan task, 1)}
	var idle *time.Timer
	for {
		x.run()
		x = nil // not kept alive while parked
		if !rs.park(r) {
			return
		}
		if idle == nil {
			idle = time.NewTimer(runnerIdle)
		} else {
			idle.Reset(runnerIdle)
		}
		select {
		case x = <-r.next:
			idle.Stop()
			if x == nil {
				return // closeIdle
			}
		case <-idle.C:
			if rs.unpark(r) {
				return
			}
			// Taken in the same instant: its exchange is on its way.
			if x = <-r.next; x == nil {
				return
			}
		}
	}
}

// park adds r to the idle runners; false when there are enough already.
func (rs *runners) park(r *runner) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if len(rs.idle) >= maxIdleRunners {
		return false
	}
	rs.idle = append(rs.idle, r)
	return true
}

// unpark removes r from the idle runners; false when start took it first.
func (rs *runners) unpark(r *runner) bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i, o := range rs.idle {
		if o == r {
			rs.idle = append(rs.idle[:i], rs.idle[i+1:]...)
			return true
		}
	}
	return false
}

// closeIdle ends the parked runners. Runners busy now park when they are
// done.
func (rs *runners) closeIdle() {
	rs.mu.Lock()
	idle := rs.idle
	rs.idle = nil
	rs.mu.Unlock()
	for _, r := range idle {
		r.next <- nil
	}
}
