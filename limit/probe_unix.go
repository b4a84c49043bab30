//go:build unix

package limit

import (
	"syscall"
	"time"
)

// processCPUTime is the user and system CPU time of the process, -1 if the
// system will not say.
func processCPUTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
