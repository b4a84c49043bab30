//go:build !unix

package benchmarks

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
