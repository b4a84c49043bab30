//go:build unix && !linux

package supervisor

import (
	"os"
	"syscall"
)

// raise sends sig to this process (no thread-directed kill here: see the
// Linux version).
func raise(sig syscall.Signal) {
	_ = syscall.Kill(os.Getpid(), sig)
}
