//go:build unix && !linux

package supervisor

import (
	"errors"
	"syscall"
)

// sysProcAttr puts the worker in its own process group. There is no
// parent-death signal outside Linux: a worker outlives a SIGKILLed sluice.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

// waitExited is not available here: Wait reaps first, then stops signalling,
// which leaves a short window in which a reused PID could be signalled.
func waitExited(int) error { return errors.ErrUnsupported }

// guardChildAttr is the command's under a guard: in the guard's group.
func guardChildAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
