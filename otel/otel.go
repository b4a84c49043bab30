package sluiceotel

import (
	"net/http"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/admission"
)

// ScopeName is the instrumentation scope of the spans.
const ScopeName = "github.com/sluicehq/sluice/otel"

// Span names.
const (
	SpanRequest = "sluice.request"
	SpanQueue   = "sluice.queue"
	SpanHandler = "sluice.handler"
)

// Options configures Wrap and WrapFront. The zero value uses the global tracer provider
// and the W3C trace context propagator.
type Options struct {
	// TracerProvider makes the tracer; nil means otel.GetTracerProvider().
	TracerProvider trace.TracerProvider
	// Propagator reads the caller's trace context from the request's
	// header; nil means propagation.TraceContext{} (traceparent,
	// tracestate).
	Propagator propagation.TextMapPropagator
}

func (o Options) tracerProvider() trace.TracerProvider {
	if o.TracerProvider == nil {
		return otel.GetTracerProvider()
	}
	return o.TracerProvider
}

func (o Options) propagator() propagation.TextMapPropagator {
	if o.Propagator == nil {
		return propagation.TraceContext{}
	}
	return o.Propagator
}

// Wrap returns next behind m's admission control, traced: each request
// gets a server span, SpanRequest, the child of the trace context its
// header carries; under it SpanQueue covers the wait for a slot (ended with
// an error status and the attribute sluice.shed when the request is shed)
// and SpanHandler covers next, whose request context carries it so that
// next's own spans nest below. m is copied, not changed: its Observe, if
// any, is still called.
func Wrap(m *admission.Middleware, next http.Handler, o Options) http.Handler {
	tracer := o.tracerProvider().Tracer(ScopeName)
	prop := o.propagator()
	traced := *m
	user := m.Observe
	traced.Observe = func(r *http.Request, queued time.Time, wait time.Duration, err error) {
		observeQueue(tracer, r, queued, wait, err)
		if user != nil {
			user(r, queued, wait, err)
		}
	}
	inner := traced.Wrap(handlerSpan(tracer, next))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := tracer.Start(ctx, SpanRequest, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("url.path", r.URL.Path),
			))
		defer span.End()
		sw := &statusWriter{ResponseWriter: w}
		inner.ServeHTTP(sw, r.WithContext(ctx))
		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
	})
}

// observeQueue records the wait for a slot as a span of its own, from
// the time it began to the time it ended.
func observeQueue(tracer trace.Tracer, r *http.Request, queued time.Time, wait time.Duration, err error) {
	_, span := tracer.Start(r.Context(), SpanQueue, trace.WithTimestamp(queued))
	if req, ok := admission.FromContext(r.Context()); ok {
		span.SetAttributes(attribute.String("sluice.priority", req.Priority.String()))
		if req.Tenant != "" {
			span.SetAttributes(attribute.String("sluice.tenant", req.Tenant))
		}
	}
	if err != nil {
		if reason, ok := admission.ShedReason(err); ok {
			span.SetAttributes(attribute.String("sluice.shed", reason.String()))
			span.SetStatus(codes.Error, "shed: "+reason.String())
		} else {
			span.SetStatus(codes.Error, err.Error()) // the client left while queued
		}
	}
	span.End(trace.WithTimestamp(queued.Add(wait)))
}

func handlerSpan(tracer trace.Tracer, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, span := tracer.Start(r.Context(), SpanHandler)
		defer span.End()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// statusWriter notes the response's status for the request span.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status == 0 && code >= 200 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach Flush, Hijack and deadlines.
func (s *statusWriter) Unwrap() http.ResponseWriter { return s.ResponseWriter }
