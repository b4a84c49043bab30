package supervisor

import (
	"os"
	"syscall"
)

// raise sends sig to the calling thread, which must be locked to its
// goroutine. A thread-directed signal is handled as the thread returns
// from the system call, before it runs anything else: a signal that kills
// has done so before raise returns. Sent to the process instead, it may be
// handled by another thread while this one goes on to exit with a code of
// its own, and the supervisor sees "exit status 129" instead of "signal:
// hangup".
func raise(sig syscall.Signal) {
	_ = syscall.Tgkill(os.Getpid(), syscall.Gettid(), sig)
}
