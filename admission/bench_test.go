package admission_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/admission"
)

// The fast path: under the limit, nobody waiting.
func BenchmarkAcquireRelease(b *testing.B) { benchAcquire(b, admission.Permit.Release) }

func BenchmarkAcquireReleaseParallel(b *testing.B) {
	benchAcquireParallel(b, admission.Permit.Release)
}

// Untimed: Acquire reads no clock; Done's timing costs that read.
func BenchmarkAcquireReleaseUntimed(b *testing.B) {
	c := newBenchController(b, 1000)
	ctx := context.Background()
	req := admission.Request{Untimed: true}
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}

// benchAcquire takes and gives back (with giveBack) a slot of a controller
// with room to spare, one goroutine.
func benchAcquire(b *testing.B, giveBack func(admission.Permit)) {
	c := newBenchController(b, 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.Acquire(ctx, admission.Request{})
		if err != nil {
			b.Fatal(err)
		}
		giveBack(p)
	}
}

// benchAcquireParallel is benchAcquire on every P.
func benchAcquireParallel(b *testing.B, giveBack func(admission.Permit)) {
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
			giveBack(p)
		}
	})
}

// The naive reference: a buffered channel used as a semaphore. It has no
// queue discipline, no limit changes and no stats; the controller has to
// earn its complexity against it.
func BenchmarkChannelSemaphore(b *testing.B) {
	sem := make(chan struct{}, 1000)
	b.ReportAllocs()
	for b.Loop() {
		sem <- struct{}{}
		<-sem
	}
}

func BenchmarkChannelSemaphoreParallel(b *testing.B) {
	sem := make(chan struct{}, 1000)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			sem <- struct{}{}
			<-sem
		}
	})
}

// The middleware's own overhead on a trivial handler, against the bare one.
func BenchmarkMiddleware(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) })
	c := newBenchController(b, 1000)
	for _, bc := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", ok},
		{"sluice", c.Wrap(ok)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", "/", nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				bc.h.ServeHTTP(w, r)
			}
		})
	}
}

type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

func newBenchController(b *testing.B, lim int) *admission.Controller {
	c, err := admission.New(admission.Options{Limit: fixed(lim), SampleWindow: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	return c
}

// The fast path with every overload policy configured but no pressure: the
// policies live on the slow path and must cost the fast path nothing.
func BenchmarkAcquireReleasePolicies(b *testing.B) {
	c, err := admission.New(admission.Options{Limit: fixed(1000), SampleWindow: -1,
		MinShare: 0.05, CoDelTarget: 5e6, AdaptiveLIFO: true, MaxQueuedPerTenant: 10,
		TenantWeight: func(string) float64 { return 1 }})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	ctx := context.Background()
	req := admission.Request{Priority: admission.Sheddable, Tenant: "acme", Cost: 2}
	b.ReportAllocs()
	for b.Loop() {
		p, err := c.Acquire(ctx, req)
		if err != nil {
			b.Fatal(err)
		}
		p.Release()
	}
}
