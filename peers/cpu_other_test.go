//go:build !unix

package peers

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
