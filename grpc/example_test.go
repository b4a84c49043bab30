package sluicegrpc_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
)

// greeter answers with the priority its call was admitted with.
type greeter struct {
	testpb.UnimplementedTestServiceServer
}

func (greeter) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	r, _ := sluicegrpc.RequestFromContext(ctx)
	return &testpb.SimpleResponse{Username: "admitted as " + r.Priority.String()}, nil
}

// A server whose calls are admitted by a Controller, and a client whose
// calls are bounded by the client package's retry budget, throttle and
// breaker, over loopback.
func Example() {
	// The server: one Controller for all its calls (an HTTP Middleware may
	// share it), believing sluice-* metadata from this host only.
	c, err := admission.New(admission.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	cl := &sluicegrpc.Classifier{
		TrustedPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")},
		Rules:        []sluicegrpc.Rule{{Method: "/grpc.testing.TestService/", Timeout: 2 * time.Second}},
	}
	si := &sluicegrpc.ServerInterceptor{Controller: c, Classify: cl.Classify}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(si.Unary()), grpc.ChainStreamInterceptor(si.Stream()))
	testpb.RegisterTestServiceServer(srv, greeter{})
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	go srv.Serve(lis)
	defer srv.Stop()

	// The client: retry only sheds, within a budget.
	ci, err := sluicegrpc.NewClientInterceptor(client.Options{})
	if err != nil {
		panic(err)
	}
	cc, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(ci.Unary()),
		grpc.WithChainStreamInterceptor(ci.Stream()))
	if err != nil {
		panic(err)
	}
	defer cc.Close()

	ctx, cancel := context.WithTimeout(client.WithPriority(context.Background(), admission.Sheddable), time.Second)
	defer cancel()
	resp, err := testpb.NewTestServiceClient(cc).UnaryCall(ctx, &testpb.SimpleRequest{})
	if err != nil {
		panic(err)
	}
	fmt.Println(resp.Username)
	// Output: admitted as sheddable
}

// What a Classifier makes of a call: the rule's class and the earlier of
// its timeout and the caller's deadline.
func ExampleClassifier() {
	cl := &sluicegrpc.Classifier{
		Rules: []sluicegrpc.Rule{
			{Method: "/shop.Cart/Checkout", Priority: admission.CriticalPlus},
			{Method: "/shop.Reports/", Priority: admission.Sheddable, Timeout: time.Second},
		},
	}
	ctx := context.Background() // a handler's context in a real server
	r := cl.Classify(ctx, "/shop.Reports/Daily")
	fmt.Println(r.Priority, !r.Deadline.IsZero())
	fmt.Println(cl.Classify(ctx, "/shop.Cart/Checkout").Priority)
	// Output:
	// sheddable true
	// critical-plus
}
