//go:build unix

package testutil_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// Work on the CPU shows in ProcessCPU: a bounded spin of 50 ms of CPU time.
func TestProcessCPUGrows(t *testing.T) {
	start := testutil.ProcessCPU()
	if start <= 0 {
		t.Fatalf("got %v, want the CPU time the test has used so far", start)
	}
	x := 0
	for i := 0; testutil.ProcessCPU()-start < 50*time.Millisecond; i++ {
		if i > 1e10 {
			t.Fatal("50 ms of CPU not seen within 1e10 iterations")
		}
		x += i
	}
	_ = x
}

func BenchmarkReportCPU(b *testing.B) {
	defer testutil.ReportCPU(b, testutil.ProcessCPU())
	for b.Loop() {
		testutil.ProcessCPU()
	}
}
