package supervisor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	// ErrStopped is returned by Run and RollingRestart (and Static.Run)
	// once stopping has begun: Shutdown was called, or Run's ctx ended.
	ErrStopped = errors.New("supervisor: stopped")
	// ErrNotRunning is returned by RollingRestart before Run.
	ErrNotRunning = errors.New("supervisor: not running")
	// ErrRestarting is returned by RollingRestart while another is running.
	ErrRestarting = errors.New("supervisor: a rolling restart is already running")
)

// Supervisor starts Count worker processes, tells a Balancer which may
// receive traffic, restarts those that exit with a backoff, stops restarting
// when they crash-loop, and replaces them one at a time on RollingRestart.
//
// Create it with New; the zero value is not usable. All methods are safe for
// concurrent use. Run supervises until its ctx is done or Shutdown
// completes; a Supervisor runs once.
//
// Lock order: Supervisor.mu is never held while calling the Balancer, the
// env, or waiting on a channel.
type Supervisor struct {
	opts    Options
	bal     Balancer
	env     env
	log     *slog.Logger
	out     *output
	backoff backoff

	restarting atomic.Bool   // a RollingRestart is in progress
	quit       chan struct{} // closed when the supervisor begins to stop: no more starts
	wg         sync.WaitGroup

	mu        sync.Mutex
	started   bool // Run was called
	closed    bool // quit is closed
	sp        *spawner
	dir       string   // private directory for unix sockets
	lifeline  *os.File // read end of the guards' pipe (Options.Guard)
	lifeKeep  *os.File // its write end, open until Run returns
	nextID    int
	slots     []slot
	workers   map[int]*worker // not yet reaped, plus each slot's current worker
	guard     crashGuard
	crashLoop bool      // the guard tripped: restarts wait for rearmAt
	rearmAt   time.Time // when the current or last cool-down ends
	trips     int       // cool-downs in a row, for their length
	exits     int       // unexpected exits
	// requestExits are the exits of workers that died holding requests
	// after answering some (Witness): not counted by the guard.
	requestExits int
}

// slot is one of the Count places a worker runs in; guarded by mu.
type slot struct {
	current  *worker // the worker serving (or starting, or dead and awaiting restart)
	failures int     // consecutive unexpected exits, for the backoff
	restarts int     // restarts after unexpected exits
}

// New returns a Supervisor that will report to bal, with o's zero fields
// replaced by their defaults. It starts nothing: call Run.
func New(bal Balancer, o Options) (*Supervisor, error) {
	return newSupervisor(bal, o, realEnv())
}

func newSupervisor(bal Balancer, o Options, e env) (*Supervisor, error) {
	if bal == nil {
		return nil, errors.New("supervisor: Balancer is nil")
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	if err := e.executable(Command{Args: o.Command, Env: o.Env, Dir: o.Dir}); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	o.Command = slices.Clone(o.Command)
	o.Env = slices.Clone(o.Env)
	return &Supervisor{
		opts:    o,
		bal:     bal,
		env:     e,
		log:     o.Logger,
		out:     &output{log: o.Logger, w: o.Output},
		backoff: backoff{min: o.BackoffMin, max: o.BackoffMax, jitter: o.BackoffJitter},
		quit:    make(chan struct{}),
		workers: make(map[int]*worker),
		guard:   crashGuard{max: o.CrashLoopExits, window: o.CrashLoopWindow},
	}, nil
}

// Run starts Count workers and supervises them until ctx is done or
// Shutdown has stopped them. Cancelling ctx stops every worker without
// draining (SIGTERM, then SIGKILL after StopTimeout), even during a
// Shutdown; for a graceful stop call Shutdown and cancel ctx after it
// returns. Run returns nil once every worker has been reaped: it never
// leaves a process behind. It returns ErrStopped if Shutdown came first,
// and an error if called twice.
func (s *Supervisor) Run(ctx context.Context) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("supervisor: Run called twice")
	}
	s.started = true
	if s.closed {
		s.mu.Unlock()
		return ErrStopped
	}
	if err := s.startLocked(); err != nil {
		s.closeLocked()
		s.mu.Unlock()
		return err
	}
	command := s.opts.Command
	s.mu.Unlock()
	s.log.Info("supervisor started", "workers", s.opts.Count, "command", command, "mode", s.opts.AddressMode)

	s.awaitStop(ctx)
	s.wg.Wait()
	s.sp.stop()
	if s.lifeKeep != nil {
		// Every worker has been reaped; a guard that somehow survived
		// takes its group down now.
		s.lifeKeep.Close()
		s.lifeline.Close()
	}
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
	s.log.Info("supervisor stopped")
	return nil
}

// startLocked makes what the workers share (the sockets' directory, the
// guards' lifeline, the spawner) and starts a worker in every slot.
// REQUIRES s.mu held.
func (s *Supervisor) startLocked() error {
	if s.opts.AddressMode == UnixMode {
		dir, err := os.MkdirTemp("", "sluice-")
		if err != nil {
			return fmt.Errorf("supervisor: socket directory: %w", err)
		}
		s.dir = dir
	}
	if s.opts.Guard != "" {
		r, w, err := os.Pipe()
		if err != nil {
			return fmt.Errorf("supervisor: guard lifeline: %w", err)
		}
		s.lifeline, s.lifeKeep = r, w
	}
	s.sp = newSpawner()
	s.slots = make([]slot, s.opts.Count)
	for i := range s.slots {
		w := s.newWorkerLocked(i)
		s.slots[i].current = w
		s.wg.Add(1)
		go s.live(w)
	}
	return nil
}

// awaitStop returns when the workers are to stop: at once when ctx is
// done, or when Shutdown has stopped them (ctx may still cut that short).
func (s *Supervisor) awaitStop(ctx context.Context) {
	select {
	case <-ctx.Done():
		s.stopAll()
	case <-s.quit:
		reaped := make(chan struct{})
		go func() {
			s.wg.Wait()
			close(reaped)
		}()
		select {
		case <-reaped:
		case <-ctx.Done():
			s.stopAll()
		}
	}
}

// stopAll stops every worker without draining and returns when all have
// been reaped.
func (s *Supervisor) stopAll() {
	var wg sync.WaitGroup
	for _, w := range s.closeAndList() {
		wg.Go(func() { s.retire(context.Background(), w, false) })
	}
	wg.Wait()
}

// closeAndList marks the supervisor closed (no more starts or restarts) and
// returns the workers not yet reaped.
func (s *Supervisor) closeAndList() []*worker {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
	var ws []*worker
	for _, w := range s.workers {
		if w.state != StateExited {
			ws = append(ws, w)
		}
	}
	return ws
}

func (s *Supervisor) closeLocked() {
	if !s.closed {
		s.closed = true
		close(s.quit)
	}
}

func (s *Supervisor) newWorkerLocked(slot int) *worker {
	s.nextID++
	w := &worker{
		id:      s.nextID,
		slot:    slot,
		addedCh: make(chan struct{}),
		exited:  make(chan struct{}),
		ep:      Endpoint{ID: s.nextID, Concurrency: s.opts.Concurrency, Adaptive: s.opts.Adaptive},
	}
	s.workers[w.id] = w
	return w
}

// Shutdown stops every worker gracefully: it stops restarts, Drains each
// Added worker through the Balancer (its in-flight requests finish), then
// sends SIGTERM, and SIGKILL after StopTimeout or when ctx is done,
// whichever comes first. Workers are stopped in parallel. Shutdown returns
// once every worker has been reaped, with the Drain failures and ctx.Err()
// if ctx ended first. Ready is false from the moment Shutdown is called.
// Calling it again waits for the same workers.
func (s *Supervisor) Shutdown(ctx context.Context) error {
	ws := s.closeAndList()
	s.log.Info("supervisor shutting down", "workers", len(ws))
	errs := make([]error, len(ws)+1)
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { errs[i] = s.retire(ctx, w, true) })
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		errs[len(ws)] = fmt.Errorf("supervisor: shutdown: %w", err)
	}
	return errors.Join(errs...)
}

// Ready reports whether at least one worker is receiving traffic and the
// workers are not crash-looping, and Shutdown has not begun. It never
// blocks on anything but a short lock.
func (s *Supervisor) Ready() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyLocked()
}

func (s *Supervisor) readyLocked() bool {
	if s.closed || s.crashLoop {
		return false
	}
	for _, w := range s.workers {
		if w.state == StateReady {
			return true
		}
	}
	return false
}

// Signal sends sig to every live worker's process group: for signals with
// a meaning to the workers, such as SIGUSR2 to reopen logs. Stopping and
// restarting are Shutdown's and RollingRestart's business. It returns how
// many workers were signalled.
func (s *Supervisor) Signal(sig syscall.Signal) int {
	s.mu.Lock()
	var ps []process
	for _, w := range s.workers {
		if w.proc != nil && w.state != StateExited {
			ps = append(ps, w.proc)
		}
	}
	s.mu.Unlock()
	n := 0
	for _, p := range ps {
		if p.Signal(sig) == nil {
			n++
		}
	}
	return n
}

// WorkerInfo is one worker in a Stats snapshot.
type WorkerInfo struct {
	ID      int       `json:"id"`
	Slot    int       `json:"slot"`
	PID     int       `json:"pid"` // 0 until spawned
	State   State     `json:"state"`
	Network string    `json:"network"`
	Addr    string    `json:"addr"`
	Started time.Time `json:"started"` // zero until spawned
	// Restarts counts the restarts of this worker's slot after unexpected
	// exits (not rolling restarts).
	Restarts int `json:"restarts"`
	// Exit says how an exited worker ended.
	Exit string `json:"exit,omitempty"`
}

// Stats is a snapshot of the supervisor for the admin page.
type Stats struct {
	Ready        bool `json:"ready"`
	CrashLooping bool `json:"crashLooping"`
	// CrashLoopUntil is when restarts resume, while CrashLooping.
	CrashLoopUntil time.Time `json:"crashLoopUntil,omitzero"`
	// Exits counts unexpected exits (crashes and failed starts) since Run.
	Exits int `json:"exits"`
	// RequestExits counts, among Exits, the workers that had answered
	// requests and died holding some (see Witness): most likely killed by
	// a request, they do not count toward the crash-loop guard.
	RequestExits int `json:"requestExits"`
	// Workers lists every worker not yet reaped and each slot's current
	// worker (which may have exited and await its restart), by slot then ID.
	Workers []WorkerInfo `json:"workers"`
}

// Stats returns a snapshot. It never blocks on anything but a short lock.
func (s *Supervisor) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Stats{Ready: s.readyLocked(), CrashLooping: s.crashLoop, Exits: s.exits, RequestExits: s.requestExits}
	if s.crashLoop {
		st.CrashLoopUntil = s.rearmAt
	}
	for _, w := range s.workers {
		wi := WorkerInfo{
			ID: w.id, Slot: w.slot, PID: w.pid, State: w.state,
			Network: w.ep.Network, Addr: w.ep.Addr, Started: w.started,
			Restarts: s.slots[w.slot].restarts,
		}
		if w.state == StateExited {
			wi.Exit = errString(w.exitErr)
		}
		st.Workers = append(st.Workers, wi)
	}
	slices.SortFunc(st.Workers, func(a, b WorkerInfo) int {
		return cmp.Or(cmp.Compare(a.Slot, b.Slot), cmp.Compare(a.ID, b.ID))
	})
	return st
}
