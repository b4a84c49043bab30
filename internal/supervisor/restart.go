package supervisor

import (
	"context"
	"fmt"
	"time"
)

// RollingRestart replaces every worker, one slot at a time, so that no
// request fails because of it: for each slot it starts a replacement, waits
// until the replacement is ready and warmed, Adds it, then Drains the old
// worker through the Balancer (its in-flight requests finish) and stops it
// (SIGTERM, SIGKILL after StopTimeout or when ctx is done). Only then does
// the next slot begin, so capacity never drops below Count workers.
//
// It clears the crash-loop guard first, and fills slots that have no live
// worker: after a crash loop, deploying a fix and calling RollingRestart
// brings the pool back without waiting for the guard's pause to end.
//
// If a replacement fails to become ready, RollingRestart stops there and
// returns the error; the old worker of that slot keeps serving. If ctx ends
// while a replacement is starting, the replacement is stopped and ctx.Err()
// returned. A second call while one is running returns ErrRestarting at
// once; before Run it returns ErrNotRunning, after Shutdown ErrStopped.
func (s *Supervisor) RollingRestart(ctx context.Context) error {
	if !s.restarting.CompareAndSwap(false, true) {
		return ErrRestarting
	}
	defer s.restarting.Store(false)
	s.mu.Lock()
	switch {
	case !s.started:
		s.mu.Unlock()
		return ErrNotRunning
	case s.closed:
		s.mu.Unlock()
		return ErrStopped
	}
	if s.crashLoop {
		s.log.Info("rolling restart clears the crash-loop guard")
	}
	s.crashLoop = false
	s.guard.reset()
	s.trips = 0
	n := len(s.slots)
	s.mu.Unlock()

	began := time.Now()
	s.log.Info("rolling restart started", "workers", n)
	for i := range n {
		if err := s.replace(ctx, i); err != nil {
			s.log.Error("rolling restart failed", "slot", i, "err", err)
			return fmt.Errorf("supervisor: rolling restart of slot %d: %w", i, err)
		}
	}
	s.log.Info("rolling restart done", "workers", n, "took", time.Since(began))
	return nil
}

// replace starts a new worker for slot i, makes it the slot's current
// worker once it is Added, and retires the old one.
func (s *Supervisor) replace(ctx context.Context, i int) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrStopped
	}
	nw := s.newWorkerLocked(i)
	s.wg.Add(1)
	s.mu.Unlock()
	go s.live(nw)

	select {
	case <-nw.addedCh:
	case <-nw.exited:
		s.mu.Lock()
		closed, err := s.closed, nw.exitErr
		s.mu.Unlock()
		if closed {
			return ErrStopped
		}
		return fmt.Errorf("replacement worker %d failed before it was ready: %w", nw.id, err)
	case <-ctx.Done():
		// It may have been Added in the meantime: drain it too, briefly.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.StopTimeout)
		defer cancel()
		s.retire(cctx, nw, true)
		return ctx.Err()
	}

	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrStopped // Shutdown stops nw with the rest
	}
	sl := &s.slots[i]
	old := sl.current
	sl.current, sl.failures = nw, 0
	if old != nil && old.state == StateExited {
		delete(s.workers, old.id)
		old = nil
	}
	s.mu.Unlock()
	if old == nil {
		return nil
	}
	return s.retire(ctx, old, true)
}
