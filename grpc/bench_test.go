package sluicegrpc_test

import (
	"context"
	"testing"

	"google.golang.org/grpc"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/limit"
)

func noop(context.Context, any) (any, error) { return nil, nil }

// discard is a server transport stream that drops what it is sent.
type discard struct{}

func (discard) Method() string               { return "/x.Y/Z" }
func (discard) SetHeader(metadata.MD) error  { return nil }
func (discard) SendHeader(metadata.MD) error { return nil }
func (discard) SetTrailer(metadata.MD) error { return nil }

// The server interceptor in process: what admission adds to a call, beside
// the bare handler, and what a shed costs.
func BenchmarkServerUnary(b *testing.B) {
	ctx := grpc.NewContextWithServerTransportStream(incoming("10.1.2.3"), discard{})
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = noop(ctx, nil)
		}
	})
	b.Run("admitted", func(b *testing.B) {
		c := newController(b, admission.Options{Limit: limit.NewFixed(1000), SampleWindow: -1})
		in := (&sluicegrpc.ServerInterceptor{Controller: c}).Unary()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = in(ctx, nil, unaryInfo, noop)
		}
	})
	b.Run("shed", func(b *testing.B) {
		in := (&sluicegrpc.ServerInterceptor{Controller: fullB(b)}).Unary()
		b.ReportAllocs()
		for b.Loop() {
			_, _ = in(ctx, nil, unaryInfo, noop)
		}
	})
}

func fullB(b *testing.B) *admission.Controller {
	c := newController(b, admission.Options{Limit: limit.NewFixed(1), QueueSize: -1, SampleWindow: -1})
	p, err := c.Acquire(context.Background(), admission.Request{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(p.Release)
	return c
}

// The client interceptor in process, over an invoker that answers at once.
func BenchmarkClientUnary(b *testing.B) {
	cc := conn(b)
	f := func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error { return nil }
	ctx := context.Background()
	b.Run("bare", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = f(ctx, "/x.Y/Z", nil, nil, cc)
		}
	})
	b.Run("interceptor", func(b *testing.B) {
		in := newInterceptor(b, client.Options{}).Unary()
		b.ReportAllocs()
		for b.Loop() {
			_ = in(ctx, "/x.Y/Z", nil, nil, cc, f)
		}
	})
}

// Whole calls over loopback, one at a time: a call served without
// interceptors, served through both, and shed.
func BenchmarkLoopbackUnary(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, cl testpb.TestServiceClient, wantErr bool) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := cl.UnaryCall(ctx, &testpb.SimpleRequest{}); (err != nil) != wantErr {
				b.Fatal(err)
			}
		}
	}
	b.Run("served/plain", func(b *testing.B) {
		run(b, dial(b, serve(b, nil, &service{}, nil)), false)
	})
	b.Run("served/sluice", func(b *testing.B) {
		c := newController(b, admission.Options{Limit: limit.NewFixed(1000), SampleWindow: -1})
		addr := serve(b, &sluicegrpc.ServerInterceptor{Controller: c}, &service{}, nil)
		run(b, dial(b, addr, withInterceptor(newInterceptor(b, client.Options{}))...), false)
	})
	b.Run("shed", func(b *testing.B) {
		addr := serve(b, &sluicegrpc.ServerInterceptor{Controller: fullB(b)}, &service{}, nil)
		run(b, dial(b, addr), true)
	})
}
