// Package benchmarks measures sluice's admission fast path side by side with
// peer limiters, in a module of its own so that the peers never enter
// sluice's go.mod. Run: cd benchmarks && go test -bench . -count 6 | benchstat -
//
// github.com/platinummonkey/go-concurrency-limits, the Go port of Netflix's
// library, is not served by the Go module proxy this project can reach (403),
// so it is not here; see docs/benchmarks.md.
package benchmarks

import (
	"context"
	"testing"

	"golang.org/x/sync/semaphore"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

func newController(b *testing.B) *admission.Controller {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(1000), SampleWindow: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// The peers, each as an acquire/release pair under the limit.
var peers = []struct {
	name string
	make func(b *testing.B) func()
}{
	{"sluice", func(b *testing.B) func() {
		c, ctx := newController(b), context.Background()
		return func() {
			p, err := c.Acquire(ctx, admission.Request{})
			if err != nil {
				b.Fatal(err)
			}
			p.Release()
		}
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

func BenchmarkAcquireRelease(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			op := p.make(b)
			b.ReportAllocs()
			for b.Loop() {
				op()
			}
		})
	}
}

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	for _, p := range peers {
		b.Run(p.name, func(b *testing.B) {
			op := p.make(b)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					op()
				}
			})
		})
	}
}
