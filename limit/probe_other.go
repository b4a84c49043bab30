//go:build !unix

package limit

import "time"

// processCPUTime is unknown here: the CPU rule of Auto then relies on the
// runnable count alone.
func processCPUTime() time.Duration { return -1 }
