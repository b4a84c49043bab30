package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// State is where a worker is in its life; see the package documentation.
type State int

const (
	StateStarting State = iota // spawned (or about to be), not ready yet
	StateWarming               // ready, receiving warm-up requests
	StateReady                 // Added to the Balancer: receiving traffic
	StateDraining              // Drain in progress: no new requests
	StateStopping              // SIGTERM sent (or about to be)
	StateExited                // reaped
)

var stateNames = [...]string{"starting", "warming", "ready", "draining", "stopping", "exited"}

func (st State) String() string {
	if st < 0 || int(st) >= len(stateNames) {
		return "state(" + strconv.Itoa(int(st)) + ")"
	}
	return stateNames[st]
}

// MarshalText makes a State read as its name in JSON.
func (st State) MarshalText() ([]byte, error) { return []byte(st.String()), nil }

// UnmarshalText reads a State's name, so that a /stats document decodes.
func (st *State) UnmarshalText(b []byte) error {
	for i, name := range stateNames {
		if string(b) == name {
			*st = State(i)
			return nil
		}
	}
	return fmt.Errorf("supervisor: unknown worker state %q", b)
}

// errStoppedBeforeStart is the exit of a worker stopped before it was spawned.
var errStoppedBeforeStart = errors.New("stopped before it was started")

// worker is one process incarnation. Its identity (id, slot) is fixed; the
// rest is guarded by Supervisor.mu. ep and pid are written only by the
// worker's own goroutine (live), which may read them without the lock.
type worker struct {
	id, slot int
	addedCh  chan struct{} // closed once Balancer.Add has returned
	exited   chan struct{} // closed once reaped, Removed and accounted for

	ep          Endpoint
	proc        process
	pid         int
	state       State
	started     time.Time
	addedAt     time.Time
	added       bool
	stopping    bool               // sluice asked it to go: its exit is expected
	termSent    bool               // SIGTERM delivered
	killed      bool               // Kill sent SIGKILL
	cancelStart context.CancelFunc // ends readiness checks and warm-up early
	exitErr     error
}

// live runs w's goroutine: the process from spawn to reap, then, if the
// slot needs it, a successor after the backoff delay, and so on.
func (s *Supervisor) live(w *worker) {
	defer s.wg.Done()
	for w != nil {
		err := s.runProcess(w)
		delay, restart := s.accountExit(w, err)
		if !restart {
			return
		}
		var next *worker
		for {
			t := time.NewTimer(delay)
			select {
			case <-t.C:
			case <-s.quit:
				t.Stop()
				return
			}
			// A crash-loop cool-down may have begun (or been extended)
			// while the slot waited: then it waits for its end.
			if next, delay = s.successor(w); delay <= 0 {
				break
			}
		}
		w = next
	}
}

// runProcess spawns w, brings it up and returns how it ended, once reaped.
func (s *Supervisor) runProcess(w *worker) error {
	spec, err := s.prepare(w)
	if err != nil {
		return err
	}
	var p process
	s.sp.do(func() { p, err = s.env.start(spec) })
	if err != nil {
		return fmt.Errorf("start %s: %w", spec.Path, err)
	}
	startCtx, cancel := context.WithTimeout(context.Background(), s.opts.StartTimeout)
	defer cancel()
	s.mu.Lock()
	w.proc, w.pid, w.started, w.cancelStart = p, p.Pid(), time.Now(), cancel
	w.ep.Pid = w.pid
	stopping := w.stopping
	s.mu.Unlock()
	s.log.Info("worker started", "worker", w.id, "slot", w.slot, "pid", w.pid, "addr", w.ep.Addr)

	procDone := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = p.Wait()
		cancel() // no more readiness checks or warm-up for a dead process
		close(procDone)
	}()
	if stopping {
		s.signal(w, syscall.SIGTERM)
	} else {
		s.bringUp(startCtx, w, procDone)
	}
	<-procDone
	return waitErr
}

// prepare gives w its address and returns the spec to start it with.
func (s *Supervisor) prepare(w *worker) (procSpec, error) {
	s.mu.Lock()
	ep, stopping := w.ep, w.stopping
	s.mu.Unlock()
	if stopping {
		return procSpec{}, errStoppedBeforeStart
	}
	var addrVar string
	switch s.opts.AddressMode {
	case UnixMode:
		ep.Network, ep.Addr = "unix", filepath.Join(s.dir, "w"+strconv.Itoa(w.id)+".sock")
		addrVar = "SLUICE_SOCKET=" + ep.Addr
	default:
		port, err := s.env.freePort()
		if err != nil {
			return procSpec{}, fmt.Errorf("pick a port: %w", err)
		}
		ep.Network, ep.Addr = "tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		addrVar = "PORT=" + strconv.Itoa(port)
	}
	s.mu.Lock()
	w.ep = ep
	command, cmdEnv, dir := s.opts.Command, s.opts.Env, s.opts.Dir // SetCommand replaces, never mutates, them
	s.mu.Unlock()
	env := append(os.Environ(), cmdEnv...)
	env = append(env, addrVar,
		"SLUICE_WORKER_ID="+strconv.Itoa(w.id),
		"SLUICE_WORKER_SLOT="+strconv.Itoa(w.slot))
	return procSpec{
		Path:     command[0],
		Args:     command,
		Env:      env,
		Dir:      dir,
		Stdout:   s.out.stream(w.id, "stdout"),
		Stderr:   s.out.stream(w.id, "stderr"),
		Guard:    s.opts.Guard,
		Lifeline: s.lifeline,
	}, nil
}

// bringUp waits for w to be ready, warms it up and Adds it to the
// Balancer. A worker that does not make it within StartTimeout is killed.
func (s *Supervisor) bringUp(ctx context.Context, w *worker, procDone <-chan struct{}) {
	began := time.Now()
	err := s.awaitReady(ctx, w)
	if err == nil {
		err = s.warmUp(ctx, w)
	}
	s.mu.Lock()
	if w.stopping {
		s.mu.Unlock()
		return // whoever stops it sends the signals
	}
	select {
	case <-procDone:
		s.mu.Unlock()
		return // its exit error says why
	default:
	}
	if err != nil {
		// Logged once, with the exit that follows (accountExit).
		w.exitErr = err
		s.mu.Unlock()
		s.signal(w, syscall.SIGKILL)
		return
	}
	// Ready once the Balancer has it, not before: a reader of Ready or
	// Stats that saw it ready earlier sent a request that no worker could
	// take (503, No Worker Available).
	was := w.state
	w.added, w.addedAt = true, time.Now()
	s.mu.Unlock()
	s.bal.Add(w.ep)
	s.mu.Lock()
	if w.state == was { // not stopped meanwhile
		w.state = StateReady
	}
	s.mu.Unlock()
	close(w.addedCh)
	s.log.Info("worker ready", "worker", w.id, "pid", w.pid, "addr", w.ep.Addr, "took", time.Since(began))
}

// firstReadyInterval is the pause after the first failed readiness check;
// it doubles up to ReadyInterval. Most workers listen within tens of
// milliseconds: a rolling restart should not wait a whole interval for each.
const firstReadyInterval = 10 * time.Millisecond

// readyHintAfter is how long a worker may stay unready before a warning
// names the likely cause, well before StartTimeout (30 s by default) ends
// its start: a worker that ignores $PORT is the most common mistake.
const readyHintAfter = 5 * time.Second

// awaitReady checks w until a check passes or ctx ends, pausing
// firstReadyInterval, then twice as long each time, up to ReadyInterval.
// Past readyHintAfter it warns once with a hint; its error carries the
// hint too.
func (s *Supervisor) awaitReady(ctx context.Context, w *worker) error {
	pause := min(firstReadyInterval, s.opts.ReadyInterval)
	began, warned := time.Now(), false
	for {
		err := s.env.check(ctx, w.ep, s.opts.ReadyPath, probeTimeout)
		if err == nil {
			return nil
		}
		if waited := time.Since(began); !warned && waited >= readyHintAfter && ctx.Err() == nil {
			warned = true
			s.log.Warn("worker not ready yet", "worker", w.id, "pid", w.pid, "after", waited.Round(time.Millisecond),
				"err", err, "hint", s.readyHint(w, err))
		}
		t := time.NewTimer(pause)
		pause = min(2*pause, s.opts.ReadyInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				// Stopped, or dead: the hint would name nothing.
				return fmt.Errorf("not ready within %v: %w", s.opts.StartTimeout, err)
			}
			return fmt.Errorf("not ready within %v: %w (%s)", s.opts.StartTimeout, err, s.readyHint(w, err))
		case <-t.C:
		}
	}
}

// readyHint names the likely cause of w's failed readiness check err: a
// worker that does not listen where it was told (it ignores $PORT, and
// listens elsewhere), or one that listens but does not answer the ready
// path with 2xx.
func (s *Supervisor) readyHint(w *worker, err error) string {
	if se := (*statusError)(nil); errors.As(err, &se) {
		return fmt.Sprintf("it listens, but does not answer GET %s with 2xx: is that its ready path?", se.path)
	}
	if w.ep.Network == "unix" {
		return "is it listening on the socket $SLUICE_SOCKET names?"
	}
	_, port, _ := net.SplitHostPort(w.ep.Addr)
	hint := fmt.Sprintf("is it listening on $PORT (%s)?", port)
	var elsewhere []string
	for _, a := range s.env.listening(w.pid) {
		if _, p, _ := net.SplitHostPort(a); p != port {
			elsewhere = append(elsewhere, a)
		}
	}
	if len(elsewhere) > 0 {
		hint += fmt.Sprintf(" It listens on %s: read the port from the PORT environment variable", strings.Join(elsewhere, ", "))
	}
	return hint
}

// warmUp sends the warm-up requests, one after another.
func (s *Supervisor) warmUp(ctx context.Context, w *worker) error {
	n := s.opts.WarmupRequests
	if n == 0 {
		return nil
	}
	s.mu.Lock()
	w.state = StateWarming
	s.mu.Unlock()
	h := http.Header{HeaderWarmup: {"1"}}
	failed, last := 0, 0
	for i := range n {
		code, err := s.env.get(ctx, w.ep, s.opts.WarmupPath, h)
		if err != nil {
			return fmt.Errorf("warm-up request %d of %d: %w", i+1, n, err)
		}
		if code < 200 || code > 399 {
			failed, last = failed+1, code
		}
	}
	if failed > 0 {
		s.log.Warn("warm-up requests answered with errors", "worker", w.id,
			"path", s.opts.WarmupPath, "failed", failed, "of", n, "status", last)
	}
	return nil
}

// accountExit records w's end and decides whether its slot restarts, and
// after how long.
func (s *Supervisor) accountExit(w *worker, err error) (delay time.Duration, restart bool) {
	byRequest := s.diedOfRequest(w)
	now := time.Now()
	s.mu.Lock()
	if w.exitErr == nil {
		w.exitErr = err
	} else if err != nil {
		w.exitErr = fmt.Errorf("%w (then %v)", w.exitErr, err)
	}
	exitErr := w.exitErr
	w.state, w.proc = StateExited, nil
	added, expected := w.added, w.stopping
	sl := &s.slots[w.slot]
	current := sl.current == w
	if !current {
		delete(s.workers, w.id)
	}
	tripped := false
	var cooldown time.Duration
	if current && !expected && !s.closed {
		s.exits++
		if byRequest {
			s.requestExits++
		}
		if !s.crashLoop && !byRequest && s.guard.record(now) {
			cooldown, tripped = s.tripLocked(now), true
		}
		if s.crashLoop {
			delay = s.rearmAt.Sub(now) // the slot waits out the cool-down
		} else {
			if added && now.Sub(w.addedAt) >= s.opts.StableAfter {
				sl.failures = 0
			}
			delay = s.backoff.delay(sl.failures, s.env.rand())
			sl.failures++
		}
		restart = true
	}
	s.mu.Unlock()

	if added {
		s.bal.Remove(w.id)
	}
	if w.ep.Network == "unix" {
		os.Remove(w.ep.Addr)
	}
	close(w.exited)

	switch {
	case expected:
		s.log.Info("worker stopped", "worker", w.id, "pid", w.pid, "exit", errString(exitErr))
	case tripped:
		s.log.Error("workers are crash-looping: restarts paused, then tried again",
			"worker", w.id, "exit", errString(exitErr),
			"exits", s.opts.CrashLoopExits+1, "window", s.opts.CrashLoopWindow, "pause", cooldown)
	case restart && byRequest:
		s.log.Warn("worker died holding requests; restarting (not counted as a crash loop)", "worker", w.id,
			"slot", w.slot, "pid", w.pid, "exit", errString(exitErr), "delay", delay)
	case restart:
		s.log.Warn("worker exited; restarting", "worker", w.id, "slot", w.slot, "pid", w.pid,
			"exit", errString(exitErr), "delay", delay)
	default:
		s.log.Warn("worker exited", "worker", w.id, "slot", w.slot, "pid", w.pid, "exit", errString(exitErr))
	}
	return delay, restart
}

// diedOfRequest reports whether w, which exited while sluice was not
// stopping it, had answered requests and died holding some, as the
// Balancer saw it (see Witness): then a request, not the command, most
// likely killed it. A worker that dies before it is ready, or on the
// first request it is given, counts as its command's failure.
func (s *Supervisor) diedOfRequest(w *worker) bool {
	wit, ok := s.bal.(Witness)
	if !ok {
		return false
	}
	s.mu.Lock()
	ask := w.added && !w.stopping
	s.mu.Unlock()
	if !ask {
		return false
	}
	d := wit.Died(w.id)
	return d.Served > 0 && d.Held > 0
}

func errString(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// successor registers the worker that replaces dead w in its slot, or
// returns nil if the slot no longer needs one. During a crash-loop
// cool-down it returns how much of it is left instead; the first slot to
// find it over re-arms the guard.
func (s *Supervisor) successor(w *worker) (*worker, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sl := &s.slots[w.slot]
	if s.closed || sl.current != w {
		return nil, 0
	}
	if s.crashLoop {
		now := time.Now()
		if left := s.rearmAt.Sub(now); left > 0 {
			return nil, left
		}
		s.crashLoop = false
		s.guard.reset()
		s.log.Warn("crash-loop pause over: restarting workers")
	}
	nw := s.newWorkerLocked(w.slot)
	sl.current = nw
	sl.restarts++
	delete(s.workers, w.id)
	return nw, 0
}

// signal sends sig to w's process group, if it has a live process. SIGTERM
// is sent at most once.
func (s *Supervisor) signal(w *worker, sig syscall.Signal) {
	s.mu.Lock()
	p := w.proc
	if p == nil || (sig == syscall.SIGTERM && w.termSent) {
		s.mu.Unlock()
		return
	}
	if sig == syscall.SIGTERM {
		w.termSent = true
	}
	s.mu.Unlock()
	p.Signal(sig)
}

// retire stops w: Drain through the Balancer if drain and w was Added, then
// terminate. It is safe to call more than once and concurrently; only the
// first call drains. It returns when w has been reaped.
func (s *Supervisor) retire(ctx context.Context, w *worker, drain bool) error {
	s.mu.Lock()
	first := !w.stopping
	w.stopping = true
	if w.cancelStart != nil {
		w.cancelStart()
	}
	added := w.added && w.state != StateExited
	if drain && added && first {
		w.state = StateDraining
	}
	s.mu.Unlock()
	var err error
	if drain && added && first {
		<-w.addedCh
		if derr := s.bal.Drain(ctx, w.id); derr != nil {
			err = fmt.Errorf("supervisor: drain worker %d: %w", w.id, derr)
		}
	}
	s.mu.Lock()
	if w.state != StateExited {
		w.state = StateStopping
	}
	s.mu.Unlock()
	s.terminate(ctx, w)
	return err
}

// terminate sends SIGTERM, waits up to StopTimeout (or until ctx is done),
// then sends SIGKILL, and returns once w has been reaped.
func (s *Supervisor) terminate(ctx context.Context, w *worker) {
	s.signal(w, syscall.SIGTERM)
	t := time.NewTimer(s.opts.StopTimeout)
	defer t.Stop()
	select {
	case <-w.exited:
		return
	case <-t.C:
		s.log.Warn("worker still running after SIGTERM; killing it", "worker", w.id, "after", s.opts.StopTimeout)
	case <-ctx.Done():
		s.log.Warn("out of time stopping worker; killing it", "worker", w.id, "err", ctx.Err())
	}
	s.signal(w, syscall.SIGKILL)
	<-w.exited
}
