package supervisor

import (
	"context"
	"fmt"
	"time"
)

// RollingRestart replaces every worker, one slot at a time, so that no
// request fails because of it. A slot that surges starts a replacement,
// waits until it is ready and warmed, Adds it, then Drains the old worker
// through the Balancer (its in-flight requests finish) and stops it
// (SIGTERM, SIGKILL after StopTimeout or when ctx is done): the slot's
// capacity never drops. A slot that is replaced (see Options.Roll) Drains
// and stops its worker first, then starts the replacement, while the other
// workers serve. Only then does the next slot begin, once Options.Settled
// says the front has caught up (see settle).
//
// It clears the crash-loop guard first, and fills slots that have no live
// worker: after a crash loop, deploying a fix and calling RollingRestart
// brings the pool back without waiting for the guard's pause to end.
//
// If a replacement fails to become ready, RollingRestart stops there and
// returns the error; the old worker of a slot that surged keeps serving,
// and a slot that was replaced restarts its new worker as after a crash
// (backoff, the crash-loop guard). If ctx ends while a replacement is
// starting, ctx.Err() is returned and the replacement is stopped, or, in a
// slot that was replaced, goes on starting: it is the slot's worker. A
// second call while one is running returns ErrRestarting at once; before
// Run it returns ErrNotRunning, after Shutdown ErrStopped.
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
		err := s.settle(ctx, i)
		if err == nil {
			replace := s.replace
			if s.opts.Roll == RollReplace && s.othersReady(i) {
				replace = s.stopThenStart
			}
			err = replace(ctx, i)
		}
		if err != nil {
			s.log.Error("rolling restart failed", "slot", i, "err", err)
			return fmt.Errorf("supervisor: rolling restart of slot %d: %w", i, err)
		}
	}
	s.log.Info("rolling restart done", "workers", n, "took", time.Since(began))
	return nil
}

// settle waits, before slot i of a rolling restart (not the first),
// until Options.Settled has reported true at two polls in a row, or
// SettleMax has passed; at once without Settled. It returns ctx's error
// if ctx ends first, ErrStopped if the supervisor begins to stop.
func (s *Supervisor) settle(ctx context.Context, i int) error {
	if i == 0 || s.opts.Settled == nil {
		return nil
	}
	began := time.Now()
	tick := time.NewTicker(SettlePoll)
	defer tick.Stop()
	calm := 0
	for {
		if s.opts.Settled() {
			calm++
		} else {
			calm = 0
		}
		waited := time.Since(began)
		if calm == 2 || waited >= SettleMax {
			if waited >= SettlePoll {
				s.log.Debug("rolling restart: waited for the backlog to clear", "waited", waited, "settled", calm == 2)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.quit:
			return ErrStopped
		case <-tick.C:
		}
	}
}

// othersReady reports whether a worker of another slot than i is ready.
func (s *Supervisor) othersReady(i int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for j := range s.slots {
		if w := s.slots[j].current; j != i && w != nil && w.state == StateReady {
			return true
		}
	}
	return false
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
		return s.startFailed(nw)
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

// stopThenStart retires slot i's worker, then starts a new one as the
// slot's current worker at once, so that if it fails the slot restarts
// it as after a crash rather than standing empty; and waits until it is
// Added. If ctx ends first it goes on starting.
func (s *Supervisor) stopThenStart(ctx context.Context, i int) error {
	s.mu.Lock()
	old := s.slots[i].current
	s.mu.Unlock()
	if old != nil {
		if err := s.retire(ctx, old, true); err != nil {
			// Stopped all the same: the slot needs its replacement.
			s.log.Warn("rolling restart: worker stopped before its drain ended", "slot", i, "err", err)
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrStopped
	}
	nw := s.newWorkerLocked(i)
	sl := &s.slots[i]
	if old := sl.current; old != nil {
		delete(s.workers, old.id)
	}
	sl.current, sl.failures = nw, 0
	s.wg.Add(1)
	s.mu.Unlock()
	go s.live(nw)

	select {
	case <-nw.addedCh:
	case <-nw.exited:
		return s.startFailed(nw)
	case <-ctx.Done():
		return ctx.Err()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrStopped
	}
	return nil
}

// startFailed is the error of a replacement nw that exited before it was
// Added.
func (s *Supervisor) startFailed(nw *worker) error {
	s.mu.Lock()
	closed, err := s.closed, nw.exitErr
	s.mu.Unlock()
	if closed {
		return ErrStopped
	}
	return fmt.Errorf("replacement worker %d failed before it was ready: %w", nw.id, err)
}
