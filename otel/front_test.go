package sluiceotel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/internal/reqinfo"
	sluiceotel "github.com/sluicehq/sluice/otel"
)

// fakeFront does with the request's Info what sluice's proxy does: /ping
// is answered before admission; /shed waits a second and is shed; any
// other path waits 2s for admission, then 35ms for worker 3, whose request
// header (what SetRequestHeaders gives it) is sent on sent.
type fakeFront struct {
	sent chan http.Header
}

func (f fakeFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	info := reqinfo.From(r.Context())
	if r.URL.Path == "/ping" {
		return
	}
	info.Queued = time.Now()
	if r.URL.Path == "/shed" {
		time.Sleep(time.Second)
		info.QueueWait, info.Shed = time.Since(info.Queued), "timeout"
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	time.Sleep(2 * time.Second)
	info.QueueWait = time.Since(info.Queued)
	h := r.Header.Clone()
	info.SetRequestHeaders(h)
	info.Dispatched, info.Worker = time.Now(), 3
	time.Sleep(35 * time.Millisecond)
	info.WorkerTime = time.Since(info.Dispatched)
	f.sent <- h
	w.Write([]byte("page"))
}

type frontRig struct {
	h     http.Handler
	spans *tracetest.InMemoryExporter
	sent  chan http.Header
}

func newFrontRig(sampler sdktrace.Sampler) *frontRig {
	g := &frontRig{spans: tracetest.NewInMemoryExporter(), sent: make(chan http.Header, 1)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(g.spans), sdktrace.WithSampler(sampler))
	g.h = sluiceotel.WrapFront(sluiceotel.Options{TracerProvider: tp})(fakeFront{sent: g.sent})
	return g
}

func (g *frontRig) serve(path, traceparent string) *httptest.ResponseRecorder {
	return serveWith(g.h, path, traceparent)
}

func (g *frontRig) byName() map[string]tracetest.SpanStub {
	out := map[string]tracetest.SpanStub{}
	for _, s := range g.spans.GetSpans() {
		out[s.Name] = s
	}
	return out
}

func attr(s tracetest.SpanStub, k attribute.Key) attribute.Value {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value
		}
	}
	return attribute.Value{}
}

// A served request: the request span continues the caller's trace; the
// queue and worker spans are its children, with the times the front
// noted; the worker is sent a traceparent naming the request span.
func TestWrapFrontServed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFrontRig(sdktrace.AlwaysSample())
		start := time.Now()
		if w := g.serve("/page", parent); w.Code != 200 {
			t.Fatalf("got %d, want 200", w.Code)
		}
		spans := g.byName()
		req, queue, worker := spans[sluiceotel.SpanRequest], spans[sluiceotel.SpanQueue], spans[sluiceotel.SpanWorker]
		if len(spans) != 3 {
			t.Fatalf("got spans %v, want request, queue and worker", spans)
		}
		if req.Parent.SpanID().String() != "00f067aa0ba902b7" || req.SpanContext.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || req.SpanKind != trace.SpanKindServer {
			t.Errorf("request span: parent %s, trace %s, kind %v; want the caller's, a server span", req.Parent.SpanID(), req.SpanContext.TraceID(), req.SpanKind)
		}
		for _, s := range []tracetest.SpanStub{queue, worker} {
			if s.Parent.SpanID() != req.SpanContext.SpanID() || s.SpanContext.TraceID() != req.SpanContext.TraceID() {
				t.Errorf("%s: parent %s, want the request span %s", s.Name, s.Parent.SpanID(), req.SpanContext.SpanID())
			}
		}
		if !queue.StartTime.Equal(start) || queue.EndTime.Sub(queue.StartTime) != 2*time.Second || queue.Status.Code == codes.Error {
			t.Errorf("queue span %v..%v (%v), want from %v for 2s, no error", queue.StartTime, queue.EndTime, queue.Status, start)
		}
		if !worker.StartTime.Equal(queue.EndTime) || worker.EndTime.Sub(worker.StartTime) != 35*time.Millisecond || worker.SpanKind != trace.SpanKindClient {
			t.Errorf("worker span %v..%v kind %v, want from the queue's end for 35ms, client", worker.StartTime, worker.EndTime, worker.SpanKind)
		}
		if id := attr(worker, "sluice.worker.id").AsInt64(); id != 3 {
			t.Errorf("got sluice.worker.id %d, want 3", id)
		}
		if !req.StartTime.Equal(start) || !req.EndTime.Equal(worker.EndTime) {
			t.Errorf("request span %v..%v, want %v..%v", req.StartTime, req.EndTime, start, worker.EndTime)
		}
		want := map[attribute.Key]any{"http.request.method": "GET", "url.path": "/page", "url.scheme": "http",
			"network.protocol.version": "1.1", "http.response.status_code": int64(200), "server.address": "example.com"}
		for k, v := range want {
			if got := attr(req, k).AsInterface(); got != v {
				t.Errorf("request span %s = %v, want %v", k, got, v)
			}
		}
		h := <-g.sent
		tp := h.Get("Traceparent")
		wantTP := "00-4bf92f3577b34da6a3ce929d0e0e4736-" + req.SpanContext.SpanID().String() + "-01"
		if tp != wantTP {
			t.Errorf("worker got traceparent %q, want %q (the request span)", tp, wantTP)
		}
		if id := attr(req, "sluice.request.id").AsString(); id == "" || id != h.Get("X-Request-Id") {
			t.Errorf("request span's sluice.request.id %q, worker's X-Request-Id %q: want the same", id, h.Get("X-Request-Id"))
		}
	})
}

// A request without a traceparent starts a trace, whose id the Info (and
// so the access log) carries.
func TestWrapFrontRoot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFrontRig(sdktrace.AlwaysSample())
		var traceID string
		h := sluiceotel.WrapFront(sluiceotel.Options{TracerProvider: sdktrace.NewTracerProvider(sdktrace.WithSyncer(g.spans))})(
			http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { traceID = reqinfo.From(r.Context()).TraceID }))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/ping", nil))
		req := g.byName()[sluiceotel.SpanRequest]
		if req.Parent.IsValid() || traceID != req.SpanContext.TraceID().String() {
			t.Errorf("request span parent %v, trace %s; Info's trace id %q: want a root, the same id", req.Parent, req.SpanContext.TraceID(), traceID)
		}
	})
}

// A shed request: the queue span ends in error with the reason, the
// request span too (503), and there is no worker span.
func TestWrapFrontShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFrontRig(sdktrace.AlwaysSample())
		if w := g.serve("/shed", ""); w.Code != 503 {
			t.Fatalf("got %d, want 503", w.Code)
		}
		spans := g.byName()
		queue, req := spans[sluiceotel.SpanQueue], spans[sluiceotel.SpanRequest]
		if _, ok := spans[sluiceotel.SpanWorker]; ok || len(spans) != 2 {
			t.Fatalf("got spans %v, want request and queue", spans)
		}
		if queue.Status.Code != codes.Error || attr(queue, "sluice.shed").AsString() != "timeout" || queue.EndTime.Sub(queue.StartTime) != time.Second {
			t.Errorf("queue span: status %v, sluice.shed %q, %v; want an error, timeout, 1s", queue.Status, attr(queue, "sluice.shed").AsString(), queue.EndTime.Sub(queue.StartTime))
		}
		if req.Status.Code != codes.Error || attr(req, "error.type").AsString() != "503" || attr(req, "sluice.shed").AsString() != "timeout" {
			t.Errorf("request span: status %v, attributes %v; want an error, error.type 503, sluice.shed", req.Status, req.Attributes)
		}
	})
}

// A request that never reached admission (a ping) has its request span
// only.
func TestWrapFrontPing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFrontRig(sdktrace.AlwaysSample())
		g.serve("/ping", "")
		if spans := g.byName(); len(spans) != 1 || spans[sluiceotel.SpanRequest].Name == "" {
			t.Errorf("got spans %v, want the request span alone", spans)
		}
	})
}

// An unsampled request records nothing, and tells the worker so (flags
// 00), so that a worker following its parent does not record it either.
func TestWrapFrontUnsampled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newFrontRig(sdktrace.NeverSample())
		g.serve("/page", "")
		tp := (<-g.sent).Get("Traceparent")
		if n := len(g.spans.GetSpans()); n != 0 || !strings.HasSuffix(tp, "-00") || len(tp) != 55 {
			t.Errorf("got %d spans, worker's traceparent %q; want none, an unsampled one", n, tp)
		}
	})
}

// discard is an exporter that drops what it is given, so that the
// benchmark measures the front's tracing, not an export.
type discard struct{}

func (discard) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discard) Shutdown(context.Context) error                             { return nil }

// BenchmarkWrapFront is the cost per request of the traced front over
// what the untraced front's own handler does (reqinfo.New): each request
// sampled and batched for export, or each dropped by the sampler.
func BenchmarkWrapFront(b *testing.B) {
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := reqinfo.From(r.Context())
		info.Queued, info.Dispatched, info.Worker = time.Now(), time.Now(), 1
	})
	untraced := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, _ := reqinfo.New(r.Context(), time.Now(), "", "", false)
		inner.ServeHTTP(w, r.WithContext(ctx))
	})
	for _, mode := range []string{"untraced", "sampled", "unsampled"} {
		b.Run(mode, func(b *testing.B) {
			var h http.Handler = untraced
			if mode != "untraced" {
				sampler := sdktrace.AlwaysSample()
				if mode == "unsampled" {
					sampler = sdktrace.NeverSample()
				}
				tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(discard{}), sdktrace.WithSampler(sampler))
				defer tp.Shutdown(context.Background())
				h = sluiceotel.WrapFront(sluiceotel.Options{TracerProvider: tp})(inner)
			}
			r := httptest.NewRequest("GET", "/page", nil)
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(w, r)
			}
		})
	}
}

// A response aborted mid-stream (the proxy's panic with
// http.ErrAbortHandler when a worker fails after its headers) still has
// its spans, and the panic goes on to net/http.
func TestWrapFrontAbort(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	h := sluiceotel.WrapFront(sluiceotel.Options{TracerProvider: tp})(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info := reqinfo.From(r.Context())
		info.Queued, info.Dispatched, info.Worker = time.Now(), time.Now(), 2
		w.WriteHeader(200)
		panic(http.ErrAbortHandler)
	}))
	defer func() {
		if p := recover(); p != http.ErrAbortHandler {
			t.Errorf("got panic %v, want http.ErrAbortHandler passed on", p)
		}
		if n := len(spans.GetSpans()); n != 3 {
			t.Errorf("got %d spans, want request, queue and worker", n)
		}
	}()
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
}
