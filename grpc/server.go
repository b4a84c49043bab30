package sluicegrpc

import (
	"context"
	"strconv"
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluicehq/sluice/admission"
)

// healthService is the standard health-checking service's prefix: it
// bypasses admission by default.
const healthService = "/grpc.health.v1.Health/"

// ServerInterceptor applies an admission.Controller to the calls of a
// grpc.Server: Unary for unary calls, Stream for streams (held for the
// stream's whole life). Only Controller is required; the zero value of
// every other field has a default. It must not be changed after its first
// Unary or Stream, whose interceptors are safe for concurrent use.
type ServerInterceptor struct {
	Controller *admission.Controller

	// Classify maps a call to its admission Request. nil means the zero
	// Classifier's: Critical, cost 1, the call's own deadline, trusting
	// nobody's metadata.
	Classify func(ctx context.Context, fullMethod string) admission.Request

	// Code is the status code of a shed call. nil means DefaultCode.
	Code func(admission.Reason) codes.Code

	// Bypass reports the calls that skip admission altogether. nil means
	// the health-checking service (grpc.health.v1.Health): a busy server
	// still answers its probes, so that it is not restarted for being busy.
	Bypass func(fullMethod string) bool
}

// DefaultCode is the status code of a shed call: UNAVAILABLE for
// ReasonShutdown (this server is going away; another may serve the call),
// RESOURCE_EXHAUSTED for the rest (this server is alive and managing its
// load: come back after the pushback).
func DefaultCode(r admission.Reason) codes.Code {
	if r == admission.ReasonShutdown {
		return codes.Unavailable
	}
	return codes.ResourceExhausted
}

// gate is a ServerInterceptor with its defaults applied.
type gate struct {
	c        *admission.Controller
	classify func(context.Context, string) admission.Request
	code     func(admission.Reason) codes.Code
	bypass   func(string) bool
}

func (s *ServerInterceptor) gate() *gate {
	if s.Controller == nil {
		panic("sluicegrpc: ServerInterceptor.Controller is nil")
	}
	g := &gate{c: s.Controller, classify: s.Classify, code: s.Code, bypass: s.Bypass}
	if g.classify == nil {
		g.classify = new(Classifier).Classify
	}
	if g.code == nil {
		g.code = DefaultCode
	}
	if g.bypass == nil {
		g.bypass = func(m string) bool { return strings.HasPrefix(m, healthService) }
	}
	return g
}

// Unary returns the interceptor for unary calls. A shed call gets Code's
// status with the sluice-shed and grpc-retry-pushback-ms trailers and never
// reaches the handler; an admitted one reaches it with its deadline on the
// context, and its slot is held until the handler returns.
func (s *ServerInterceptor) Unary() grpc.UnaryServerInterceptor {
	g := s.gate()
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if g.bypass(info.FullMethod) {
			return handler(ctx, req)
		}
		ctx, cancel, p, reason, err := g.admit(ctx, info.FullMethod)
		defer cancel()
		if reason != admission.ReasonNone {
			// SetTrailer fails only without a server stream in ctx, where
			// there is nobody to send trailers to.
			_ = grpc.SetTrailer(ctx, g.trailer(reason))
		}
		if err != nil {
			return nil, err
		}
		completed := false
		defer func() { finish(p, completed) }()
		resp, err := handler(ctx, req)
		completed = true
		return resp, err
	}
}

// Stream returns the interceptor for streams: as Unary, the slot held until
// the handler returns, that is for the stream's whole life. A stream's
// duration is no service time (a watch may stay open for hours), so it is
// given back without a latency sample: the limit learns from unary calls.
func (s *ServerInterceptor) Stream() grpc.StreamServerInterceptor {
	g := s.gate()
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if g.bypass(info.FullMethod) {
			return handler(srv, ss)
		}
		ctx, cancel, p, reason, err := g.admit(ss.Context(), info.FullMethod)
		defer cancel()
		if reason != admission.ReasonNone {
			ss.SetTrailer(g.trailer(reason))
		}
		if err != nil {
			return err
		}
		defer p.Release()
		return handler(srv, &serverStream{ServerStream: ss, ctx: ctx})
	}
}

// finish gives p back: with a latency sample when the handler returned, so
// that the limit learns from it, without one when it panicked.
func finish(p admission.Permit, completed bool) {
	if completed {
		p.Done()
		return
	}
	p.Release()
}

// admit classifies the call and asks the Controller for a slot. On a shed it
// returns the reason and the status error to answer with; on a
// cancellation, the context's status. An admitted call's context carries
// its Request, its priority for outbound calls, and its deadline; the
// caller must give the Permit back, and call cancel when the handler has
// returned.
func (g *gate) admit(ctx context.Context, fullMethod string) (_ context.Context, cancel context.CancelFunc, _ admission.Permit, _ admission.Reason, _ error) {
	req := g.classify(ctx, fullMethod)
	ctx = admission.NewContext(ctx, req)
	cancel = func() {}
	p, err := g.c.Acquire(ctx, req)
	if err != nil {
		if reason, ok := admission.ShedReason(err); ok {
			return ctx, cancel, p, reason, status.Error(g.code(reason), "sluice: shed: "+reason.String())
		}
		return ctx, cancel, p, admission.ReasonNone, status.FromContextError(err).Err()
	}
	if !req.Deadline.IsZero() {
		// After Acquire, not before: a queued call past its deadline is
		// shed by the Controller, with pushback, not dropped for a done
		// context.
		ctx, cancel = context.WithDeadline(ctx, req.Deadline)
	}
	return ctx, cancel, p, admission.ReasonNone, nil
}

// trailer returns the trailers of a call shed for reason.
func (g *gate) trailer(reason admission.Reason) metadata.MD {
	ms := g.c.RetryAfter().Milliseconds()
	return metadata.Pairs(TrailerShed, reason.String(), TrailerPushback, strconv.FormatInt(ms, 10))
}

// serverStream gives a stream's handler the admitted call's context.
type serverStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (s *serverStream) Context() context.Context { return s.ctx }

// RequestFromContext returns the admission Request of the call whose
// handler runs with ctx: admission.FromContext, under this package's name.
func RequestFromContext(ctx context.Context) (admission.Request, bool) {
	return admission.FromContext(ctx)
}
