//go:build !unix

package testutil

import "time"

// ProcessCPU returns 0: this system's CPU time is not read.
func ProcessCPU() time.Duration { return 0 }
