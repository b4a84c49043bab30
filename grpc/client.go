package sluicegrpc

import (
	"context"
	"errors"
	"net/http"
	"net/url"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/client"
)

// ClientInterceptor bounds a gRPC client's calls with the client package's
// rules (see client.Options and the package documentation): per target a
// circuit breaker and adaptive throttling, a retry budget for all its calls,
// and per call at most MaxAttempts attempts, waiting out the server's
// pushback or a jittered backoff. It forwards the context's priority as
// sluice-priority metadata (client.WithPriority, or the inbound call's under
// ServerInterceptor); grpc-go forwards the deadline itself.
//
// Make one with NewClientInterceptor (the zero value is not usable) and use
// it for every ClientConn of a process, or one per group of calls whose
// retries should share a budget. It is safe for concurrent use. A unary call blocks while it waits to
// retry and stops waiting when its context is done.
type ClientInterceptor struct {
	t *client.Transport
}

// NewClientInterceptor returns a ClientInterceptor bounded by o, or o's
// validation error. The zero Options select the client package's defaults.
func NewClientInterceptor(o client.Options) (*ClientInterceptor, error) {
	t, err := client.New(bridge{}, o)
	if err != nil {
		return nil, err
	}
	return &ClientInterceptor{t: t}, nil
}

// Stats returns a snapshot of the interceptor's counters, with one
// HostStats per target (the ClientConn's Target, lower-cased).
func (ci *ClientInterceptor) Stats() client.Stats { return ci.t.Stats() }

// Unary returns the interceptor for unary calls.
func (ci *ClientInterceptor) Unary() grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		call := &unaryCall{method: method, req: req, reply: reply, cc: cc, invoker: invoker, opts: opts}
		resp, err := ci.t.RoundTrip(request(ctx, cc.Target(), method, call, true))
		if resp != nil {
			// The last attempt's answer: its error (nil on success) is
			// the call's.
			return call.err
		}
		return callError(ctx, err)
	}
}

// request dresses a call up as the HTTP request the Transport expects: its
// host is the target, so breaker and throttle are per target, and its
// method says whether a shed call may be retried (a body-less GET may; a
// POST without an idempotency key may not).
func request(ctx context.Context, target, method string, a attempter, retry bool) *http.Request {
	m := http.MethodPost
	if retry {
		m = http.MethodGet
	}
	r := &http.Request{
		Method:     m,
		URL:        &url.URL{Scheme: "grpc", Host: target, Path: method},
		Header:     make(http.Header),
		Proto:      "HTTP/2.0",
		ProtoMajor: 2,
		Host:       target,
	}
	return r.WithContext(context.WithValue(ctx, attempterKey{}, a))
}

// callError turns an error of the Transport into the call's status error:
// an attempt's gRPC error as it was, a local refusal as UNAVAILABLE (which
// still wraps client.ErrCircuitOpen or client.ErrThrottled), a deadline or
// cancellation as DEADLINE_EXCEEDED or CANCELLED.
func callError(ctx context.Context, err error) error {
	var ae *attemptError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ae):
		return ae.rpc
	case errors.Is(err, client.ErrCircuitOpen), errors.Is(err, client.ErrThrottled):
		return &localError{st: status.New(codes.Unavailable, err.Error()), err: err}
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		code := codes.DeadlineExceeded
		if errors.Is(err, context.Canceled) || errors.Is(ctx.Err(), context.Canceled) {
			code = codes.Canceled
		}
		return &localError{st: status.New(code, err.Error()), err: err}
	}
	return &localError{st: status.New(codes.Internal, err.Error()), err: err}
}

// localError is the status of a call that failed in the interceptor: grpc-go
// and status.Code see the status, errors.Is sees the cause.
type localError struct {
	st  *status.Status
	err error
}

func (e *localError) Error() string              { return e.st.Err().Error() }
func (e *localError) GRPCStatus() *status.Status { return e.st }
func (e *localError) Unwrap() error              { return e.err }
