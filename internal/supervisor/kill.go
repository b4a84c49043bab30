package supervisor

import (
	"fmt"
	"syscall"
)

// Kill ends worker id at once: SIGKILL to its whole process group, for a
// worker that cannot stop gracefully. The proxy calls it, through
// proxy.Options.OnHung, for a worker found hung (an endless loop holding
// its event loop would never act on SIGTERM's drain either), having taken
// it out of rotation first. Kill is the one way back from the proxy to the
// supervisor; the Balancer's methods stay one way.
//
// The exit of a worker that sluice was not stopping counts as unexpected,
// reason recorded as its cause: it is Removed, its slot restarted after
// the backoff, and it counts toward the crash-loop guard. A worker already
// being stopped (drained in a rolling restart, say) is killed without the
// rest of its StopTimeout. Kill never blocks on anything but a short lock
// and the signal; it is safe to call from any goroutine, but not from the
// Balancer's methods. It reports false when id is not a live process (not
// yet spawned, exited, unknown) or was killed already.
func (s *Supervisor) Kill(id int, reason string) bool {
	s.mu.Lock()
	w := s.workers[id]
	if w == nil || w.proc == nil || w.state == StateExited || w.killed {
		s.mu.Unlock()
		return false
	}
	w.killed = true
	if !w.stopping && w.exitErr == nil {
		w.exitErr = fmt.Errorf("killed: %s", reason)
	}
	pid, p := w.pid, w.proc
	s.mu.Unlock()
	s.log.Error("killing worker", "worker", id, "pid", pid, "reason", reason)
	return p.Signal(syscall.SIGKILL) == nil
}
