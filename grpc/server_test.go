package sluicegrpc_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admission"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
	"github.com/sluicehq/sluice/limit"
)

// transportStream stands in for grpc-go's server stream, which
// grpc.SetTrailer writes to.
type transportStream struct {
	mu      sync.Mutex
	trailer metadata.MD
}

func (s *transportStream) Method() string                  { return "/x.Y/Z" }
func (s *transportStream) SetHeader(metadata.MD) error     { return nil }
func (s *transportStream) SendHeader(metadata.MD) error    { return nil }
func (s *transportStream) SetTrailer(md metadata.MD) error { s.setTrailer(md); return nil }
func (s *transportStream) setTrailer(md metadata.MD) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.trailer = metadata.Join(s.trailer, md)
}

func (s *transportStream) trailers() metadata.MD {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.trailer.Copy()
}

// serverStream stands in for a stream handed to a stream interceptor.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
	ts  transportStream
}

func (s *serverStream) Context() context.Context  { return s.ctx }
func (s *serverStream) SetTrailer(md metadata.MD) { s.ts.setTrailer(md) }
func (s *serverStream) trailers() metadata.MD     { return s.ts.trailers() }

func newController(t testing.TB, o admission.Options) *admission.Controller {
	t.Helper()
	c, err := admission.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// full returns a Controller of limit 1 and no queue whose one slot is
// taken: every call is shed with ReasonLimit.
func full(t *testing.T) *admission.Controller {
	t.Helper()
	c := newController(t, admission.Options{Limit: limit.NewFixed(1), QueueSize: -1, SampleWindow: -1})
	p, err := c.Acquire(context.Background(), admission.Request{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Release)
	return c
}

var unaryInfo = &grpc.UnaryServerInfo{FullMethod: "/x.Y/Z"}

func callUnary(si *sluicegrpc.ServerInterceptor, ctx context.Context, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (*transportStream, error) {
	ts := new(transportStream)
	_, err := si.Unary()(grpc.NewContextWithServerTransportStream(ctx, ts), "req", info, h)
	return ts, err
}

func mustNotRun(t *testing.T) grpc.UnaryHandler {
	return func(context.Context, any) (any, error) {
		t.Error("the handler of a shed call ran")
		return nil, nil
	}
}

func wantShed(t *testing.T, err error, trailer metadata.MD, code codes.Code, reason, pushback string) {
	t.Helper()
	if got := status.Code(err); got != code {
		t.Errorf("got code %v (%v), want %v", got, err, code)
	}
	if got := trailer.Get(sluicegrpc.TrailerShed); len(got) != 1 || got[0] != reason {
		t.Errorf("got %s trailer %q, want [%s]", sluicegrpc.TrailerShed, got, reason)
	}
	if got := trailer.Get(sluicegrpc.TrailerPushback); len(got) != 1 || got[0] != pushback {
		t.Errorf("got %s trailer %q, want [%s]", sluicegrpc.TrailerPushback, got, pushback)
	}
}

func TestUnaryShedIsResourceExhaustedWithPushback(t *testing.T) {
	si := &sluicegrpc.ServerInterceptor{Controller: full(t)}
	ts, err := callUnary(si, incoming("10.1.2.3"), unaryInfo, mustNotRun(t))
	// RetryAfter is whole seconds, at least one.
	wantShed(t, err, ts.trailers(), codes.ResourceExhausted, "limit", "1000")
}

func TestUnaryShutdownIsUnavailable(t *testing.T) {
	c := newController(t, admission.Options{})
	c.Close()
	si := &sluicegrpc.ServerInterceptor{Controller: c}
	ts, err := callUnary(si, incoming("10.1.2.3"), unaryInfo, mustNotRun(t))
	wantShed(t, err, ts.trailers(), codes.Unavailable, "shutdown", "1000")
}

func TestUnaryCustomCode(t *testing.T) {
	si := &sluicegrpc.ServerInterceptor{
		Controller: full(t),
		Code:       func(admission.Reason) codes.Code { return codes.Unavailable },
	}
	ts, err := callUnary(si, incoming("10.1.2.3"), unaryInfo, mustNotRun(t))
	wantShed(t, err, ts.trailers(), codes.Unavailable, "limit", "1000")
}

// An admitted call reaches the handler holding its slot, with its Request,
// its deadline and its priority for outbound calls on the context; the slot
// is given back when the handler returns, whatever it returns.
func TestUnaryAdmitted(t *testing.T) {
	c := newController(t, admission.Options{Limit: limit.NewFixed(4), SampleWindow: -1})
	cl := &sluicegrpc.Classifier{
		TrustedPeers: loopback,
		Rules:        []sluicegrpc.Rule{{Method: "/x.Y/", Priority: admission.Sheddable, Timeout: time.Hour}},
	}
	si := &sluicegrpc.ServerInterceptor{Controller: c, Classify: cl.Classify}
	appErr := status.Error(codes.NotFound, "no such thing")
	before := time.Now()
	_, err := callUnary(si, incoming("127.0.0.1", sluicegrpc.MetadataPriority, "critical-plus"), unaryInfo,
		func(ctx context.Context, req any) (any, error) {
			if got := c.Stats().Inflight; got != 1 {
				t.Errorf("in flight in the handler: got %d, want 1", got)
			}
			r, ok := sluicegrpc.RequestFromContext(ctx)
			if !ok || r.Priority != admission.CriticalPlus {
				t.Errorf("RequestFromContext: got %+v, %v, want critical-plus", r, ok)
			}
			d, ok := ctx.Deadline()
			if !ok || d.Before(before.Add(time.Hour)) || d.After(time.Now().Add(time.Hour)) {
				t.Errorf("handler deadline: got %v, %v, want the rule's hour", d, ok)
			}
			return nil, appErr
		})
	if err != appErr {
		t.Errorf("got %v, want the handler's error", err)
	}
	if st := c.Stats(); st.Inflight != 0 || st.Admitted != 1 {
		t.Errorf("after: got in flight %d, admitted %d, want 0, 1", st.Inflight, st.Admitted)
	}
}

func TestUnaryPanicReleasesTheSlot(t *testing.T) {
	c := newController(t, admission.Options{Limit: limit.NewFixed(1), SampleWindow: -1})
	si := &sluicegrpc.ServerInterceptor{Controller: c}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not go on")
			}
		}()
		_, _ = callUnary(si, incoming("10.1.2.3"), unaryInfo, func(context.Context, any) (any, error) { panic("boom") })
	}()
	if got := c.Stats().Inflight; got != 0 {
		t.Errorf("in flight after a panic: got %d, want 0", got)
	}
}

func TestHealthChecksBypassAdmission(t *testing.T) {
	si := &sluicegrpc.ServerInterceptor{Controller: full(t)}
	ran := false
	health := &grpc.UnaryServerInfo{FullMethod: "/grpc.health.v1.Health/Check"}
	_, err := callUnary(si, incoming("10.1.2.3"), health, func(context.Context, any) (any, error) { ran = true; return nil, nil })
	if err != nil || !ran {
		t.Errorf("health check on a full server: got %v, ran %v, want nil, true", err, ran)
	}

	si = &sluicegrpc.ServerInterceptor{Controller: full(t), Bypass: func(string) bool { return false }}
	_, err = callUnary(si, incoming("10.1.2.3"), health, mustNotRun(t))
	if status.Code(err) != codes.ResourceExhausted {
		t.Errorf("health check without the bypass: got %v, want RESOURCE_EXHAUSTED", err)
	}
}

// A call whose caller gives up while it waits leaves the queue with the
// context's status, and neither a shed trailer nor a run.
func TestUnaryCancelledWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, admission.Options{Limit: limit.NewFixed(1), SampleWindow: -1})
		p, _ := c.Acquire(context.Background(), admission.Request{})
		defer p.Release()
		si := &sluicegrpc.ServerInterceptor{Controller: c}
		ctx, cancel := context.WithCancel(incoming("10.1.2.3"))
		var ts *transportStream
		var err error
		done := make(chan struct{})
		go func() {
			defer close(done)
			ts, err = callUnary(si, ctx, unaryInfo, mustNotRun(t))
		}()
		synctest.Wait()
		if got := c.Stats().Queued; got != 1 {
			t.Fatalf("queued: got %d, want 1", got)
		}
		cancel()
		<-done
		if status.Code(err) != codes.Canceled {
			t.Errorf("got %v, want CANCELLED", err)
		}
		if tr := ts.trailers(); len(tr) != 0 {
			t.Errorf("got trailers %v, want none", tr)
		}
	})
}

// A rule's timeout is the Request's deadline: a queued call that cannot be
// served before it is shed by the Controller with pushback, before the
// caller's own, longer, deadline.
func TestUnaryRuleDeadlineShedsWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, admission.Options{Limit: limit.NewFixed(1), SampleWindow: -1})
		p, _ := c.Acquire(context.Background(), admission.Request{})
		defer p.Release()
		cl := &sluicegrpc.Classifier{Rules: []sluicegrpc.Rule{{Timeout: 100 * time.Millisecond}}}
		si := &sluicegrpc.ServerInterceptor{Controller: c, Classify: cl.Classify}
		ctx, cancel := context.WithTimeout(incoming("10.1.2.3"), time.Minute)
		defer cancel()
		start := time.Now()
		ts, err := callUnary(si, ctx, unaryInfo, mustNotRun(t))
		if waited := time.Since(start); waited != 100*time.Millisecond {
			t.Errorf("waited %v, want 100ms", waited)
		}
		wantShed(t, err, ts.trailers(), codes.ResourceExhausted, "deadline", "1000")
	})
}

func TestStreamShed(t *testing.T) {
	si := &sluicegrpc.ServerInterceptor{Controller: full(t)}
	ss := &serverStream{ctx: incoming("10.1.2.3")}
	err := si.Stream()(nil, ss, &grpc.StreamServerInfo{FullMethod: "/x.Y/Watch"}, func(any, grpc.ServerStream) error {
		t.Error("the handler of a shed stream ran")
		return nil
	})
	wantShed(t, err, ss.trailers(), codes.ResourceExhausted, "limit", "1000")
}

// A stream holds its slot until its handler returns, and the handler's
// stream carries the admitted call's context.
func TestStreamAdmitted(t *testing.T) {
	c := newController(t, admission.Options{Limit: limit.NewFixed(1), QueueSize: -1, SampleWindow: -1})
	cl := &sluicegrpc.Classifier{TrustedPeers: loopback, Rules: []sluicegrpc.Rule{{Timeout: time.Hour}}}
	si := &sluicegrpc.ServerInterceptor{Controller: c, Classify: cl.Classify}
	ss := &serverStream{ctx: incoming("127.0.0.1", sluicegrpc.MetadataPriority, "sheddable")}
	handlerErr := errors.New("stream over")
	err := si.Stream()(nil, ss, &grpc.StreamServerInfo{FullMethod: "/x.Y/Watch"}, func(_ any, s grpc.ServerStream) error {
		if _, err := c.Acquire(context.Background(), admission.Request{}); err == nil {
			t.Error("a second call was admitted while the stream held the only slot")
		}
		r, ok := sluicegrpc.RequestFromContext(s.Context())
		if !ok || r.Priority != admission.Sheddable {
			t.Errorf("RequestFromContext: got %+v, %v, want sheddable", r, ok)
		}
		if _, ok := s.Context().Deadline(); !ok {
			t.Error("the stream's context has no deadline, want the rule's")
		}
		return handlerErr
	})
	if err != handlerErr {
		t.Errorf("got %v, want the handler's error", err)
	}
	if st := c.Stats(); st.Inflight != 0 || st.Latency != 0 {
		t.Errorf("after the stream: got %d in flight, latency %v, want 0, none: a stream's life is no service time", st.Inflight, st.Latency)
	}
}

func TestServerInterceptorWithoutController(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("got no panic, want one for a nil Controller")
		}
	}()
	new(sluicegrpc.ServerInterceptor).Unary()
}
