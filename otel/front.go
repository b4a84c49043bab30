package sluiceotel

import (
	"bufio"
	"context"
	"encoding/hex"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/reqinfo"
)

// SpanWorker is the span of the call to a worker, in the sluice binary.
const SpanWorker = "sluice.worker"

// WrapFront returns the tracing of the sluice binary's front: a function
// that wraps its whole handler, outermost, so that every request is seen,
// served or shed, answered by a worker, a fallback or sluice's own 502
// and 504 (cli.Extensions.WrapFront).
//
// Each request gets a server span, SpanRequest, the child of the trace
// context its header carries. The request's reqinfo.Info is made here,
// before the front's own handlers, which fill it in (the access log's
// handler keeps it): its trace id is the span's, so that the access log
// and the trace join, and the traceparent the proxy sends the worker names
// the request span as the parent, so that the worker's spans nest under
// sluice's. The front records nothing while it serves; when it has
// answered, what the Info learnt becomes the request span's children,
// with their own times: SpanQueue, the wait for admission (an error status
// and sluice.shed when shed), and SpanWorker, the call to the worker that
// answered (sluice.worker.id).
//
// The Info's ID is generated here; a handler inside that knows whether
// to believe the peer's X-Request-Id sets it (reqinfo.Info.SetID).
func WrapFront(o Options) func(http.Handler) http.Handler {
	tracer := o.tracerProvider().Tracer(ScopeName)
	prop := o.propagator()
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			ctx := prop.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
			ctx, span := tracer.Start(ctx, SpanRequest, trace.WithSpanKind(trace.SpanKindServer),
				trace.WithTimestamp(start), trace.WithAttributes(requestAttributes(r)...))
			ctx, info := reqinfo.New(ctx, start, "", r.Header.Get(reqinfo.HeaderTraceparent), false)
			if sc := span.SpanContext(); sc.IsValid() {
				info.SetTraceparent(traceparent(sc))
			}
			sw := &statusWriter{ResponseWriter: w}
			// Deferred: a response aborted mid-stream (a panic with
			// http.ErrAbortHandler) has its spans too.
			defer func() {
				end := time.Now()
				if span.IsRecording() {
					recordQueue(ctx, tracer, info)
					recordWorker(ctx, tracer, info)
					endRequest(span, sw.status, info)
				}
				span.End(trace.WithTimestamp(end))
			}()
			next.ServeHTTP(sw, r.WithContext(ctx))
		})
	}
}

// traceparent is the W3C traceparent naming sc as the parent, with the
// flags the specification defines (sampled, random), as
// propagation.TraceContext writes it.
func traceparent(sc trace.SpanContext) string {
	var b [55]byte
	tid, sid := sc.TraceID(), sc.SpanID()
	copy(b[:], "00-")
	hex.Encode(b[3:35], tid[:])
	b[35] = '-'
	hex.Encode(b[36:52], sid[:])
	b[52] = '-'
	hex.Encode(b[53:], []byte{byte(sc.TraceFlags() & (trace.FlagsSampled | trace.FlagsRandom))})
	return string(b[:])
}

// requestAttributes are the HTTP server semantic conventions' attributes
// known when a request arrives.
func requestAttributes(r *http.Request) []attribute.KeyValue {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	version := "2"
	if r.ProtoMajor == 1 {
		version = "1." + strconv.Itoa(r.ProtoMinor)
	}
	kv := make([]attribute.KeyValue, 0, 7)
	kv = append(kv,
		attribute.String("http.request.method", r.Method),
		attribute.String("url.path", r.URL.Path),
		attribute.String("url.scheme", scheme),
		attribute.String("network.protocol.version", version),
	)
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		kv = append(kv, attribute.String("client.address", host))
	}
	if r.Host != "" {
		kv = append(kv, attribute.String("server.address", r.Host))
	}
	if ua := r.UserAgent(); ua != "" {
		kv = append(kv, attribute.String("user_agent.original", ua))
	}
	return kv
}

// recordQueue records the wait for admission, when the request reached it
// (a ping, a body refused, an upgrade do not): from Queued, or where that
// is not noted, from the request's arrival.
func recordQueue(ctx context.Context, tracer trace.Tracer, info *reqinfo.Info) {
	from := info.Queued
	if from.IsZero() {
		if info.QueueWait == 0 && info.Shed == "" {
			return
		}
		from = info.Start
	}
	_, span := tracer.Start(ctx, SpanQueue, trace.WithTimestamp(from))
	if info.Shed != "" {
		span.SetAttributes(attribute.String("sluice.shed", info.Shed))
		span.SetStatus(codes.Error, "shed: "+info.Shed)
	}
	span.End(trace.WithTimestamp(from.Add(info.QueueWait)))
}

// recordWorker records the call to the worker that had the request last,
// when one did: a client span, from dispatch to its response (its headers
// and first bytes, for a stream).
func recordWorker(ctx context.Context, tracer trace.Tracer, info *reqinfo.Info) {
	if info.Dispatched.IsZero() {
		return
	}
	_, span := tracer.Start(ctx, SpanWorker, trace.WithSpanKind(trace.SpanKindClient),
		trace.WithTimestamp(info.Dispatched),
		trace.WithAttributes(attribute.Int("sluice.worker.id", info.Worker)))
	span.End(trace.WithTimestamp(info.Dispatched.Add(info.WorkerTime)))
}

// endRequest sets what is known once the request is answered: its status
// (an error from 500 on, as the conventions have it for a server), its ID,
// its shed reason.
func endRequest(span trace.Span, status int, info *reqinfo.Info) {
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status),
		attribute.String("sluice.request.id", info.ID))
	if info.Shed != "" {
		span.SetAttributes(attribute.String("sluice.shed", info.Shed))
	}
	if status >= 500 {
		span.SetAttributes(attribute.String("error.type", strconv.Itoa(status)))
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}

// Hijack takes the connection for a protocol switch, which the front makes
// only once the worker has answered 101: the status recorded.
func (s *statusWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(s.ResponseWriter).Hijack()
	if err == nil && s.status == 0 {
		s.status = http.StatusSwitchingProtocols
	}
	return c, brw, err
}
