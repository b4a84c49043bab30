package admission_test

import (
	"context"
	"testing"

	"github.com/sluicehq/sluice/admission"
)

// The fast path given back with Done, which times the request and records
// it in the service-time histogram (Release records nothing): the cost of
// the histograms on the request path.
func BenchmarkAcquireDone(b *testing.B) {
	c := newBenchController(b, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.Acquire(ctx, admission.Request{})
		if err != nil {
			b.Fatal(err)
		}
		p.Done()
	}
}

func BenchmarkAcquireDoneParallel(b *testing.B) {
	c := newBenchController(b, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			p, err := c.Acquire(ctx, admission.Request{})
			if err != nil {
				b.Error(err)
				return
			}
			p.Done()
		}
	})
}
