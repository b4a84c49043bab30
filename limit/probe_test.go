package limit_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// The probe reads this process: a goroutine count, CPU time that only
// grows, and at least one CPU.
func TestProbeReadsThisProcess(t *testing.T) {
	p := limit.NewProbe()
	now := time.Now()
	r1 := p.Read(now)
	x := 0
	for i := range 20_000_000 {
		x += i % 7
	}
	r2 := p.Read(now)
	if r1.Runnable < 0 || r1.CPUs < 1 || r2.CPUTime < r1.CPUTime || r1.CPUTime < 0 {
		t.Errorf("got %+v then %+v (%d), want runnable >= 0, CPUs >= 1, CPU time growing", r1, r2, x)
	}
}

// BenchmarkProbeRead is one probe of the admission loop (ten per window).
func BenchmarkProbeRead(b *testing.B) {
	p := limit.NewProbe()
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		p.Read(now)
	}
}
