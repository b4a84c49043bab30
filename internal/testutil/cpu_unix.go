//go:build unix

package testutil

import (
	"syscall"
	"time"
)

// ProcessCPU returns the CPU time, user and system, this process has
// used; 0 if it cannot be read.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
