// Package peers measures sluice's admission fast path side by side with
// peer limiters, in a module of its own so that the peers never enter
// sluice's go.mod. Run: cd peers && go test -bench . -count 6 | benchstat -
//
// github.com/platinummonkey/go-concurrency-limits, the Go port of Netflix's
// library, is not served by the Go module proxy this project can reach (403),
// so it is not here; see docs/benchmarks.md.
package peers

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// newController is a Controller with room to spare and the default
// limit's sample window (limit.Auto's), whose loop sets how many requests
// it times every tenth of it (see warm).
func newController(b *testing.B) *admission.Controller {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(1000), SampleWindow: limit.AutoWindow})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// warm runs op for five of the Controller's probe intervals (10 ms) before
// it is measured: a Controller times a sample of its requests once it has
// seen their rate, as a service does once it has been up for a moment.
func warm(op func()) func() {
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); {
		for range 1000 {
			op()
		}
	}
	return op
}

// The peers, each as an acquire/release pair under the limit.
var peers = []struct {
	name string
	make func(b *testing.B) func()
}{
	{"sluice", func(b *testing.B) func() {
		c, ctx := newController(b), context.Background()
		return warm(func() {
			p, err := c.Acquire(ctx, admission.Request{})
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		})
	}},
	// The default request given back with Done, as the middleware and the
	// gRPC interceptors do: the timed pair, and the sample fed to the
	// limit.
	{"sluice-done", func(b *testing.B) func() {
		c, ctx := newController(b), context.Background()
		return warm(func() {
			p, err := c.Acquire(ctx, admission.Request{})
			if err != nil {
				b.Fatal(err)
			}
			p.Done()
		})
	}},
	// Untimed: what a caller that gives its slots back with Release (or
	// times its own work, as sluice's proxy does) pays. Permit.Done's
	// timing costs one monotonic clock read on top.
	{"sluice-untimed", func(b *testing.B) func() {
		c, ctx := newController(b), context.Background()
		req := admission.Request{Untimed: true}
		return warm(func() {
			p, err := c.Acquire(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		})
	}},
	{"x-sync-semaphore", func(b *testing.B) func() {
		s, ctx := semaphore.NewWeighted(1000), context.Background()
		return func() {
			if err := s.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			s.Release(1)
		}
	}},
	{"channel", func(b *testing.B) func() {
		sem := make(chan struct{}, 1000)
		return func() {
			sem <- struct{}{}
			<-sem
		}
	}},
}

// reportCPU adds the metric cpu-ns/op, the process's CPU time per op
// since start: on a machine other processes load, the time a benchmark
// waits for a CPU inflates ns/op but not this. With several goroutines it
// sums their CPUs, spinning included.
func reportCPU(b *testing.B, start time.Duration, ok bool) {
	if end, ok2 := cpuTime(); ok && ok2 && b.N > 0 {
		b.ReportMetric(float64(end-start)/float64(b.N), "cpu-ns/op")
	}
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			op := p.make(b)
			b.ReportAllocs()
			b.ResetTimer()
			start, ok := cpuTime()
			for b.Loop() {
				op()
			}
			reportCPU(b, start, ok)
		})
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			op := p.make(b)
			b.ReportAllocs()
			b.ResetTimer()
			start, ok := cpuTime()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op()
				}
			})
			reportCPU(b, start, ok)
		})
	}
}

// BenchmarkAcquireReleaseProcs is the parallel pair at 1 and 2 Ps (up to
// the machine's CPUs), and with 8 goroutines per P: how the cost of the
// shared state grows with the cores a service runs on, and under the
// contention of more goroutines than Ps.
func BenchmarkAcquireReleaseProcs(b *testing.B) {
	type setting struct {
		procs, perP int
	}
	var settings []setting
	for _, n := range []int{1, 2, 4, 8} {
		if n <= runtime.NumCPU() {
			settings = append(settings, setting{n, 1})
		}
	}
	settings = append(settings, setting{runtime.GOMAXPROCS(0), 8})
	for _, st := range settings {
		for _, p := range peers {
			b.Run(fmt.Sprintf("procs=%d/goroutines=%d/%s", st.procs, st.procs*st.perP, p.name), func(b *testing.B) {
				defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(st.procs))
				op := p.make(b)
				b.ReportAllocs()
				b.ResetTimer()
				b.SetParallelism(st.perP)
				start, ok := cpuTime()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						op()
					}
				})
				reportCPU(b, start, ok)
			})
		}
	}
}
