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
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
	sluicegrpc "github.com/sluicehq/sluice/grpc"
)

// outcome is what the fake invoker answers one attempt with.
type outcome struct {
	code    codes.Code
	trailer []string
}

var (
	okCall      = outcome{code: codes.OK}
	unavailable = outcome{code: codes.Unavailable} // a connection failure
)

func shedWith(code codes.Code, pushbackMS string) outcome {
	return outcome{code: code, trailer: []string{sluicegrpc.TrailerShed, "queue-full", sluicegrpc.TrailerPushback, pushbackMS}}
}

// invoker is a scripted grpc.UnaryInvoker: attempt i gets outcomes[i], the
// last repeating. It records when each attempt came and what metadata it
// carried.
type invoker struct {
	mu       sync.Mutex
	outcomes []outcome
	at       []time.Time
	md       []metadata.MD
}

func (f *invoker) invoke(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, opts ...grpc.CallOption) error {
	f.mu.Lock()
	md, _ := metadata.FromOutgoingContext(ctx)
	f.at = append(f.at, time.Now())
	f.md = append(f.md, md)
	o := f.outcomes[min(len(f.at), len(f.outcomes))-1]
	f.mu.Unlock()
	for _, opt := range opts {
		if tr, ok := opt.(grpc.TrailerCallOption); ok {
			*tr.TrailerAddr = metadata.Pairs(o.trailer...)
		}
	}
	if o.code == codes.OK {
		return nil
	}
	return status.Error(o.code, "scripted")
}

func (f *invoker) attempts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.at)
}

// conn returns a ClientConn that is never connected: the interceptors read
// only its Target.
func conn(t testing.TB) *grpc.ClientConn {
	t.Helper()
	cc, err := grpc.NewClient("passthrough:///backend", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func newInterceptor(t testing.TB, o client.Options) *sluicegrpc.ClientInterceptor {
	t.Helper()
	if o.Rand == nil {
		o.Rand = func() float64 { return 0.5 }
	}
	ci, err := sluicegrpc.NewClientInterceptor(o)
	if err != nil {
		t.Fatal(err)
	}
	return ci
}

func unary(ci *sluicegrpc.ClientInterceptor, ctx context.Context, cc *grpc.ClientConn, f *invoker) error {
	return ci.Unary()(ctx, "/x.Y/Z", "req", "reply", cc, f.invoke)
}

// A shed call is retried after the pushback, rounded up to whole seconds
// and stretched by up to a tenth (Rand 0.5: a twentieth).
func TestClientRetriesShedAfterPushback(t *testing.T) {
	cc := conn(t)
	for _, tc := range []struct {
		name string
		shed outcome
		wait time.Duration
	}{
		{"resource exhausted, 1000 ms", shedWith(codes.ResourceExhausted, "1000"), 1050 * time.Millisecond},
		{"unavailable, 1500 ms", shedWith(codes.Unavailable, "1500"), 2100 * time.Millisecond},
		{"pushback without sluice-shed", outcome{code: codes.ResourceExhausted, trailer: []string{sluicegrpc.TrailerPushback, "1000"}}, 1050 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ci := newInterceptor(t, client.Options{})
				f := &invoker{outcomes: []outcome{tc.shed, okCall}}
				if err := unary(ci, context.Background(), cc, f); err != nil {
					t.Fatalf("got %v, want success on the retry", err)
				}
				if len(f.at) != 2 {
					t.Fatalf("got %d attempts, want 2", len(f.at))
				}
				if got := f.at[1].Sub(f.at[0]); got != tc.wait {
					t.Errorf("waited %v between attempts, want %v", got, tc.wait)
				}
				if st := ci.Stats(); st.Retries != 1 || st.Attempts != 2 || st.Requests != 1 {
					t.Errorf("got %+v, want 1 request, 2 attempts, 1 retry", st)
				}
			})
		})
	}
}

// Only a call the server says it did not run is retried; other failures
// and answers are returned as they came, after one attempt.
func TestClientRetriesOnlySheds(t *testing.T) {
	cc := conn(t)
	for _, tc := range []struct {
		name string
		out  outcome
	}{
		{"unavailable without a trailer", unavailable},
		{"resource exhausted without a trailer", outcome{code: codes.ResourceExhausted}},
		{"negative pushback", outcome{code: codes.ResourceExhausted, trailer: []string{sluicegrpc.TrailerPushback, "-1"}}},
		{"deadline exceeded", outcome{code: codes.DeadlineExceeded}},
		{"an answer", outcome{code: codes.NotFound}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ci := newInterceptor(t, client.Options{})
				f := &invoker{outcomes: []outcome{tc.out, okCall}}
				err := unary(ci, context.Background(), cc, f)
				if status.Code(err) != tc.out.code {
					t.Errorf("got %v, want code %v", err, tc.out.code)
				}
				if n := f.attempts(); n != 1 {
					t.Errorf("got %d attempts, want 1", n)
				}
			})
		})
	}
}

// The retry budget keeps retries to RetryRatio of the calls, however many
// are shed: 10 calls shed every time make 11 attempts, not 30.
func TestClientBudgetBoundsRetries(t *testing.T) {
	cc := conn(t)
	for _, tc := range []struct {
		name     string
		o        client.Options
		attempts int
	}{
		{"budget of a tenth", client.Options{RetryRatio: 0.1, RetryMinRate: -1, ThrottleK: -1}, 11},
		{"budget lifted", client.Options{RetryRatio: 1, RetryMinRate: 1000, ThrottleK: -1}, 30},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ci := newInterceptor(t, tc.o)
				f := &invoker{outcomes: []outcome{shedWith(codes.ResourceExhausted, "0")}}
				for range 10 {
					err := unary(ci, context.Background(), cc, f)
					if status.Code(err) != codes.ResourceExhausted {
						t.Fatalf("got %v, want the last shed", err)
					}
				}
				if n := f.attempts(); n != tc.attempts {
					t.Errorf("got %d attempts for 10 calls, want %d", n, tc.attempts)
				}
			})
		})
	}
}

// Five failures in a row open the target's breaker: the next call fails at
// once with UNAVAILABLE wrapping client.ErrCircuitOpen, and is not sent.
// Sheds and answers do not open it, nor do calls the caller cancelled.
func TestClientBreaker(t *testing.T) {
	cc := conn(t)
	for _, tc := range []struct {
		name string
		out  outcome
		open bool
	}{
		{"failures", unavailable, true},
		{"sheds", shedWith(codes.ResourceExhausted, "1000"), false},
		{"answers", outcome{code: codes.Internal}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ci := newInterceptor(t, client.Options{MaxAttempts: 1, ThrottleK: -1})
				f := &invoker{outcomes: []outcome{tc.out}}
				for range 5 {
					_ = unary(ci, context.Background(), cc, f)
				}
				err := unary(ci, context.Background(), cc, f)
				if got := errors.Is(err, client.ErrCircuitOpen); got != tc.open {
					t.Errorf("6th call: got %v, want open %v", err, tc.open)
				}
				if tc.open {
					if status.Code(err) != codes.Unavailable || f.attempts() != 5 {
						t.Errorf("got %v after %d attempts, want UNAVAILABLE after 5", err, f.attempts())
					}
					if st := ci.Stats().Hosts["passthrough:///backend"]; st.Breaker != client.BreakerOpen {
						t.Errorf("got breaker %v, want open", st.Breaker)
					}
				}
			})
		})
	}
}

func TestClientCancelledCallsAreNotFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{MaxAttempts: 1, ThrottleK: -1})
		for range 6 {
			ctx, cancel := context.WithCancel(context.Background())
			err := ci.Unary()(ctx, "/x.Y/Z", nil, nil, cc, func(context.Context, string, any, any, *grpc.ClientConn, ...grpc.CallOption) error {
				cancel()
				return status.Error(codes.Canceled, "context canceled")
			})
			if status.Code(err) != codes.Canceled {
				t.Fatalf("got %v, want CANCELLED", err)
			}
		}
		if st := ci.Stats().Hosts["passthrough:///backend"]; st.Breaker != client.BreakerClosed {
			t.Errorf("got breaker %v after cancelled calls, want closed", st.Breaker)
		}
	})
}

// A target that sheds most calls is throttled locally: the call fails at
// once with UNAVAILABLE wrapping client.ErrThrottled.
func TestClientThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{MaxAttempts: 1, ThrottleMinRate: -1, Rand: func() float64 { return 0 }})
		f := &invoker{outcomes: []outcome{shedWith(codes.ResourceExhausted, "1000")}}
		_ = unary(ci, context.Background(), cc, f)
		err := unary(ci, context.Background(), cc, f)
		if !errors.Is(err, client.ErrThrottled) || status.Code(err) != codes.Unavailable {
			t.Errorf("got %v, want UNAVAILABLE wrapping ErrThrottled", err)
		}
		if n := f.attempts(); n != 1 {
			t.Errorf("got %d attempts, want 1", n)
		}
	})
}

// The context's priority goes out as sluice-priority metadata, replacing
// the caller's own; without one, the caller's stays.
func TestClientPropagatesPriority(t *testing.T) {
	cc := conn(t)
	ci := newInterceptor(t, client.Options{})
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want []string
	}{
		{"none", context.Background(), nil},
		{"from the context", client.WithPriority(context.Background(), admission.Sheddable), []string{"sheddable"}},
		{"replacing the caller's", client.WithPriority(metadata.AppendToOutgoingContext(context.Background(),
			sluicegrpc.MetadataPriority, "critical-plus", "x-other", "kept"), admission.Sheddable), []string{"sheddable"}},
		{"the caller's when the context says nothing", metadata.AppendToOutgoingContext(context.Background(),
			sluicegrpc.MetadataPriority, "critical-plus"), []string{"critical-plus"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &invoker{outcomes: []outcome{okCall}}
			if err := unary(ci, tc.ctx, cc, f); err != nil {
				t.Fatal(err)
			}
			got := f.md[0].Get(sluicegrpc.MetadataPriority)
			if len(got) != len(tc.want) || len(got) > 0 && got[0] != tc.want[0] {
				t.Errorf("got %s %q, want %q", sluicegrpc.MetadataPriority, got, tc.want)
			}
			if orig, _ := metadata.FromOutgoingContext(tc.ctx); len(orig.Get("x-other")) > 0 && len(f.md[0].Get("x-other")) != 1 {
				t.Errorf("got metadata %v, want the caller's x-other kept", f.md[0])
			}
		})
	}
}

// A call with less than a millisecond left is not sent.
func TestClientNoTimeLeft(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		cc := conn(t)
		ci := newInterceptor(t, client.Options{})
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Microsecond)
		defer cancel()
		f := &invoker{outcomes: []outcome{okCall}}
		err := unary(ci, ctx, cc, f)
		if status.Code(err) != codes.DeadlineExceeded || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want DEADLINE_EXCEEDED wrapping context.DeadlineExceeded", err)
		}
		if n := f.attempts(); n != 0 {
			t.Errorf("got %d attempts, want 0", n)
		}
	})
}

func TestNewClientInterceptorValidates(t *testing.T) {
	if _, err := sluicegrpc.NewClientInterceptor(client.Options{MaxAttempts: -1}); err == nil {
		t.Error("got nil, want the Options' error")
	}
}
