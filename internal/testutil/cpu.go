package testutil

import (
	"testing"
	"time"
)

// ReportCPU reports, as cpu-ns/op, the CPU time (user and system) the
// process has used per op since since, a ProcessCPU reading. On a shared
// machine it is a steadier cost than ns/op, which counts the time the
// machine's other work took; and it counts every goroutine's work, the
// garbage collector's too. Where the CPU time cannot be read it reports 0.
//
//	defer testutil.ReportCPU(b, testutil.ProcessCPU())
func ReportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(ProcessCPU()-since)/float64(b.N), "cpu-ns/op")
}
