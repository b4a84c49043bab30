package sluicegrpc_test

import (
	"context"
	"errors"
	"io"
	"net"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/limit"
)

// These tests run real gRPC servers and clients over 127.0.0.1. Every call
// has a deadline, every handler that blocks waits on a gate the test opens,
// and the server is stopped (cancelling what still runs) at cleanup.

const callTimeout = 30 * time.Second

// service is the grpc.testing TestService: UnaryCall and
// StreamingOutputCall wait for gate when it is set, and answer with the
// priority and the remaining deadline their call was admitted with.
type service struct {
	testpb.UnimplementedTestServiceServer
	gate    chan struct{} // nil: do not wait
	entered chan struct{} // nil: do not tell
	// downstream, when set, is called with the handler's context and its
	// answer returned: a service in the middle of a chain.
	downstream testpb.TestServiceClient
}

func (s *service) wait(ctx context.Context) error {
	if s.entered != nil {
		s.entered <- struct{}{}
	}
	if s.gate == nil {
		return nil
	}
	select {
	case <-s.gate:
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func (s *service) UnaryCall(ctx context.Context, _ *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	if err := s.wait(ctx); err != nil {
		return nil, err
	}
	if s.downstream != nil {
		return s.downstream.UnaryCall(ctx, &testpb.SimpleRequest{})
	}
	r, _ := sluicegrpc.RequestFromContext(ctx)
	resp := &testpb.SimpleResponse{Username: r.Priority.String()}
	if d, ok := ctx.Deadline(); ok {
		resp.OauthScope = time.Until(d).String()
	}
	return resp, nil
}

func (s *service) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream testpb.TestService_StreamingOutputCallServer) error {
	if err := stream.Send(&testpb.StreamingOutputCallResponse{}); err != nil {
		return err
	}
	return s.wait(stream.Context())
}

// observer counts the unary calls that reach a server and tells of those
// shed.
type observer struct {
	arrivals atomic.Int64
	sheds    chan struct{} // nil: do not tell; else told without blocking
}

// serve starts a gRPC server on 127.0.0.1 with si's interceptors (nil:
// none) behind o's (nil: none), and returns its address.
func serve(t testing.TB, si *sluicegrpc.ServerInterceptor, svc *service, o *observer) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	observe := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if o == nil {
			return h(ctx, req)
		}
		o.arrivals.Add(1)
		resp, err := h(ctx, req)
		if status.Code(err) == codes.ResourceExhausted && o.sheds != nil {
			select {
			case o.sheds <- struct{}{}:
			default:
			}
		}
		return resp, err
	}
	var s *grpc.Server
	if si == nil {
		s = grpc.NewServer()
	} else {
		s = grpc.NewServer(grpc.ChainUnaryInterceptor(observe, si.Unary()), grpc.ChainStreamInterceptor(si.Stream()))
	}
	testpb.RegisterTestServiceServer(s, svc)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve(lis)
	}()
	t.Cleanup(func() {
		s.Stop()
		<-done
	})
	return lis.Addr().String()
}

func dial(t testing.TB, addr string, opts ...grpc.DialOption) testpb.TestServiceClient {
	t.Helper()
	opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return testpb.NewTestServiceClient(cc)
}

func withInterceptor(ci *sluicegrpc.ClientInterceptor) []grpc.DialOption {
	return []grpc.DialOption{grpc.WithChainUnaryInterceptor(ci.Unary()), grpc.WithChainStreamInterceptor(ci.Stream())}
}

type result struct {
	err     error
	trailer metadata.MD
	took    time.Duration
}

// The overload run: 32 callers at once against a limit of 4 and a queue of
// 4. While the 4 admitted calls are still running, the other 24 are shed at
// once, RESOURCE_EXHAUSTED with the pushback and reason trailers, without
// waiting for a slot; once the admitted calls finish, they and the queued
// ones all succeed.
func TestLoopbackOverload(t *testing.T) {
	const callers, lim, queue = 32, 4, 4
	c := newController(t, admission.Options{Limit: limit.NewFixed(lim), QueueSize: queue, QueueTimeout: time.Minute, SampleWindow: -1})
	svc := &service{gate: make(chan struct{}), entered: make(chan struct{}, callers)}
	cl := dial(t, serve(t, &sluicegrpc.ServerInterceptor{Controller: c}, svc, nil))
	// Connect first, so that the latencies below are the calls' alone: an
	// unimplemented method is admitted and answered at once.
	if _, err := cl.EmptyCall(context.Background(), &testpb.Empty{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("warm-up: got %v, want UNIMPLEMENTED", err)
	}

	results := make(chan result, callers)
	for range callers {
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			var tr metadata.MD
			start := time.Now()
			_, err := cl.UnaryCall(ctx, &testpb.SimpleRequest{}, grpc.Trailer(&tr))
			results <- result{err, tr, time.Since(start)}
		}()
	}
	for range lim {
		<-svc.entered
	}
	var sheds []time.Duration
	for range callers - lim - queue {
		r := <-results // the gate is still closed: these did not wait for a slot
		if status.Code(r.err) != codes.ResourceExhausted {
			t.Fatalf("while the admitted calls run: got %v, want RESOURCE_EXHAUSTED", r.err)
		}
		if got := r.trailer.Get(sluicegrpc.TrailerShed); len(got) != 1 || got[0] != "queue-full" {
			t.Errorf("got %s %q, want [queue-full]", sluicegrpc.TrailerShed, got)
		}
		if got := r.trailer.Get(sluicegrpc.TrailerPushback); len(got) != 1 || got[0] != "1000" {
			t.Errorf("got %s %q, want [1000]", sluicegrpc.TrailerPushback, got)
		}
		sheds = append(sheds, r.took)
	}
	if st := c.Stats(); st.Inflight != lim || st.Queued != queue {
		t.Errorf("with the sheds answered: got %d in flight, %d queued, want %d, %d", st.Inflight, st.Queued, lim, queue)
	}
	close(svc.gate)
	for range lim + queue {
		if r := <-results; r.err != nil {
			t.Errorf("admitted or queued call: got %v, want success", r.err)
		}
	}
	if st := c.Stats(); st.Admitted != 1+lim+queue || st.Shed[admission.ReasonQueueFull] != callers-lim-queue {
		t.Errorf("got %d admitted, %d shed, want %d, %d", st.Admitted, st.Shed[admission.ReasonQueueFull], 1+lim+queue, callers-lim-queue)
	}
	sort.Slice(sheds, func(i, j int) bool { return sheds[i] < sheds[j] })
	t.Logf("shed latency over loopback: median %v, max %v (%d sheds)", sheds[len(sheds)/2], sheds[len(sheds)-1], len(sheds))
}

// The client side of an overload: 40 callers whose every attempt is shed
// (one call holds the only slot). With the default retry budget's ratio
// (a tenth, no per-second floor) they make at most 44 attempts; with the
// budget lifted, each makes its 3, 120 in all.
func TestLoopbackClientBudgetStopsRetryAmplification(t *testing.T) {
	const callers = 40
	for _, tc := range []struct {
		name        string
		o           client.Options
		min, max    int64
		maxRetries  uint64
		wantDenials bool
	}{
		{"budget", client.Options{RetryRatio: 0.1, RetryMinRate: -1, ThrottleK: -1}, callers, callers + callers/10, callers / 10, true},
		{"no budget", client.Options{RetryRatio: 1, RetryMinRate: 1000, ThrottleK: -1}, 3 * callers, 3 * callers, 2 * callers, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newController(t, admission.Options{Limit: limit.NewFixed(1), QueueSize: -1, SampleWindow: -1})
			svc := &service{gate: make(chan struct{}), entered: make(chan struct{}, 1)}
			var o observer
			addr := serve(t, &sluicegrpc.ServerInterceptor{Controller: c}, svc, &o)

			blocker := make(chan error, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
				defer cancel()
				_, err := dial(t, addr).UnaryCall(ctx, &testpb.SimpleRequest{})
				blocker <- err
			}()
			<-svc.entered
			svc.entered = nil

			ci := newInterceptor(t, tc.o)
			cl := dial(t, addr, withInterceptor(ci)...)
			results := make(chan error, callers)
			for range callers {
				go func() {
					ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
					defer cancel()
					_, err := cl.UnaryCall(ctx, &testpb.SimpleRequest{})
					results <- err
				}()
			}
			for range callers {
				if err := <-results; status.Code(err) != codes.ResourceExhausted {
					t.Errorf("got %v, want RESOURCE_EXHAUSTED", err)
				}
			}
			close(svc.gate)
			if err := <-blocker; err != nil {
				t.Errorf("the admitted call: got %v, want success", err)
			}
			attempts := o.arrivals.Load() - 1
			st := ci.Stats()
			if attempts < tc.min || attempts > tc.max || st.Retries > tc.maxRetries || attempts != int64(callers+st.Retries) {
				t.Errorf("got %d attempts, %d retries, want %d..%d attempts, <= %d retries, attempts = calls + retries", attempts, st.Retries, tc.min, tc.max, tc.maxRetries)
			}
			if tc.wantDenials && st.RetriesDenied == 0 {
				t.Error("the budget denied no retry")
			}
			t.Logf("%d calls, every attempt shed: %d attempts (%.2fx), %d retries, %d denied by the budget",
				callers, attempts, float64(attempts)/callers, st.Retries, st.RetriesDenied)
		})
	}
}

// grpc-go's own retry policy waits out the pushback: with a backoff of a
// minute and a deadline of 20 s, the retry that succeeds can only have come
// after the one-second pushback.
func TestLoopbackGRPCRetryPolicyHonoursPushback(t *testing.T) {
	c := newController(t, admission.Options{Limit: limit.NewFixed(1), QueueSize: -1, SampleWindow: -1})
	svc := &service{gate: make(chan struct{}), entered: make(chan struct{}, 3)}
	o := &observer{sheds: make(chan struct{}, 1)}
	addr := serve(t, &sluicegrpc.ServerInterceptor{Controller: c}, svc, o)

	blocker := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		_, err := dial(t, addr).UnaryCall(ctx, &testpb.SimpleRequest{})
		blocker <- err
	}()
	<-svc.entered

	const retryPolicy = `{"methodConfig": [{
		"name": [{"service": "grpc.testing.TestService"}],
		"retryPolicy": {"maxAttempts": 2, "initialBackoff": "60s", "maxBackoff": "60s",
			"backoffMultiplier": 1, "retryableStatusCodes": ["RESOURCE_EXHAUSTED"]}}]}`
	cl := dial(t, addr, grpc.WithDefaultServiceConfig(retryPolicy))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	called := make(chan error, 1)
	go func() {
		_, err := cl.UnaryCall(ctx, &testpb.SimpleRequest{})
		called <- err
	}()
	// The first attempt is shed at once; then free the slot for the retry.
	select {
	case <-o.sheds:
	case err := <-called:
		t.Fatalf("the call ended before its first attempt was shed: %v", err)
	}
	close(svc.gate)
	if err := <-blocker; err != nil {
		t.Fatalf("the admitted call: got %v", err)
	}
	if err := <-called; err != nil {
		t.Fatalf("got %v, want the retry after the pushback to succeed", err)
	}
	if n := o.arrivals.Load(); n != 3 {
		t.Errorf("got %d arrivals, want 3 (the blocker, the shed attempt, the retry)", n)
	}
}

// Priority and deadline travel through a chain: the caller's priority as
// sluice-priority, believed by a trusted server, taken by its handler's
// outbound call to the next server, believed there too; the deadline as
// grpc-timeout. An untrusted server ignores the priority.
func TestLoopbackPriorityAndDeadlinePropagate(t *testing.T) {
	trusting := func() *sluicegrpc.ServerInterceptor {
		c := newController(t, admission.Options{})
		cl := &sluicegrpc.Classifier{TrustedPeers: loopback}
		return &sluicegrpc.ServerInterceptor{Controller: c, Classify: cl.Classify}
	}
	ci := newInterceptor(t, client.Options{})
	back := serve(t, trusting(), &service{}, nil)
	front := serve(t, trusting(), &service{downstream: dial(t, back, withInterceptor(ci)...)}, nil)
	untrusting := serve(t, &sluicegrpc.ServerInterceptor{Controller: newController(t, admission.Options{})}, &service{}, nil)

	ctx, cancel := context.WithTimeout(client.WithPriority(context.Background(), admission.Sheddable), 10*time.Second)
	defer cancel()
	for _, tc := range []struct {
		name, addr, want string
	}{
		{"through a trusted chain", front, "sheddable"},
		{"to an untrusting server", untrusting, "critical"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, err := dial(t, tc.addr, withInterceptor(ci)...).UnaryCall(ctx, &testpb.SimpleRequest{})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Username != tc.want {
				t.Errorf("the last server admitted the call as %q, want %q", resp.Username, tc.want)
			}
			left, err := time.ParseDuration(resp.OauthScope)
			if err != nil || left <= 0 || left > 10*time.Second {
				t.Errorf("the last server's deadline: got %q left, want within the caller's 10s", resp.OauthScope)
			}
		})
	}
}

// A stream holds its slot for its whole life: while one is open a second
// stream and a unary call are shed, the stream with the shed trailers; once
// it ends, calls are admitted again. The streams go through a
// ClientInterceptor, which counts their ends.
func TestLoopbackStreams(t *testing.T) {
	c := newController(t, admission.Options{Limit: limit.NewFixed(1), QueueSize: -1, SampleWindow: -1})
	svc := &service{gate: make(chan struct{})}
	ci := newInterceptor(t, client.Options{ThrottleK: -1})
	addr := serve(t, &sluicegrpc.ServerInterceptor{Controller: c}, svc, nil)
	cl, plain := dial(t, addr, withInterceptor(ci)...), dial(t, addr)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()

	open, err := cl.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := open.Recv(); err != nil {
		t.Fatalf("first message: %v", err)
	}
	shed, err := cl.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = shed.Recv()
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("second stream: got %v, want RESOURCE_EXHAUSTED", err)
	}
	if got := shed.Trailer().Get(sluicegrpc.TrailerShed); len(got) != 1 || got[0] != "limit" {
		t.Errorf("second stream: got %s %q, want [limit]", sluicegrpc.TrailerShed, got)
	}
	if _, err := plain.UnaryCall(ctx, &testpb.SimpleRequest{}); status.Code(err) != codes.ResourceExhausted {
		t.Errorf("unary call while the stream is open: got %v, want RESOURCE_EXHAUSTED", err)
	}

	close(svc.gate)
	if _, err := open.Recv(); !errors.Is(err, io.EOF) {
		t.Errorf("end of the first stream: got %v, want io.EOF", err)
	}
	if _, err := plain.UnaryCall(ctx, &testpb.SimpleRequest{}); err != nil {
		t.Errorf("unary call after the stream: got %v, want success", err)
	}
	// Both streams' ends are counted: the shed one is no accept.
	if h := ci.Stats().Hosts[addr]; h.Requests != 2 || h.Accepts != 1 {
		t.Errorf("got %d requests, %d accepts for the streams, want 2, 1", h.Requests, h.Accepts)
	}
}
