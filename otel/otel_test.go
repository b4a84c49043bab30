package sluiceotel_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
	sluiceotel "github.com/sluicehq/sluice/otel"
)

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

// rig is a Controller of one slot behind a traced Middleware whose
// handler waits on release for /block, and records its span context.
type rig struct {
	h       http.Handler
	spans   *tracetest.InMemoryExporter
	release chan struct{}
	inner   chan trace.SpanContext
}

func newRig(t *testing.T, queueSize int) *rig {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(1), QueueSize: queueSize, QueueTimeout: time.Minute, SampleWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	g := &rig{spans: tracetest.NewInMemoryExporter(), release: make(chan struct{}), inner: make(chan trace.SpanContext, 10)}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(g.spans))
	m := &admission.Middleware{Controller: c, Classify: func(*http.Request) admission.Request {
		return admission.Request{Priority: admission.Sheddable, Tenant: "acme"}
	}}
	g.h = sluiceotel.Wrap(m, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		g.inner <- trace.SpanContextFromContext(r.Context())
		if r.URL.Path == "/block" {
			<-g.release
		}
	}), sluiceotel.Options{TracerProvider: tp})
	return g
}

func (g *rig) serve(path, traceparent string) *httptest.ResponseRecorder {
	return serveWith(g.h, path, traceparent)
}

// serveWith serves a GET of path through h, with a traceparent header
// when one is given, and returns what h wrote.
func serveWith(h http.Handler, path, traceparent string) *httptest.ResponseRecorder {
	r := httptest.NewRequest("GET", path, nil)
	if traceparent != "" {
		r.Header.Set("Traceparent", traceparent)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// byName returns the ended spans of one trace by name.
func (g *rig) byName(traceID trace.TraceID) map[string]tracetest.SpanStub {
	out := map[string]tracetest.SpanStub{}
	for _, s := range g.spans.GetSpans() {
		if s.SpanContext.TraceID() == traceID {
			out[s.Name] = s
		}
	}
	return out
}

func TestSpansNestUnderCallersTrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, 10)
		go g.serve("/block", "")
		<-g.inner
		synctest.Wait()
		done := make(chan struct{})
		go func() { g.serve("/page", parent); close(done) }()
		synctest.Wait()
		time.Sleep(2 * time.Second) // /page waits for /block's slot
		close(g.release)
		handlerSC := func() trace.SpanContext { <-done; return <-g.inner }()

		remote, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
		spans := g.byName(remote)
		req, queue, handler := spans[sluiceotel.SpanRequest], spans[sluiceotel.SpanQueue], spans[sluiceotel.SpanHandler]
		if len(spans) != 3 {
			t.Fatalf("got spans %v in the caller's trace, want request, queue and handler", spans)
		}
		if got := req.Parent.SpanID().String(); got != "00f067aa0ba902b7" || !req.Parent.IsRemote() || req.SpanKind != trace.SpanKindServer {
			t.Errorf("request span: parent %s (remote %v), kind %v; want the caller's 00f067aa0ba902b7, server", got, req.Parent.IsRemote(), req.SpanKind)
		}
		for _, s := range []tracetest.SpanStub{queue, handler} {
			if s.Parent.SpanID() != req.SpanContext.SpanID() {
				t.Errorf("%s: parent %s, want the request span %s", s.Name, s.Parent.SpanID(), req.SpanContext.SpanID())
			}
		}
		if d := queue.EndTime.Sub(queue.StartTime); d != 2*time.Second {
			t.Errorf("queue span lasted %v, want the 2s wait", d)
		}
		if !queue.EndTime.After(queue.StartTime) || handler.StartTime.Before(queue.EndTime) {
			t.Errorf("the handler span starts at %v, before the queue span ends at %v", handler.StartTime, queue.EndTime)
		}
		if handlerSC.SpanID() != handler.SpanContext.SpanID() {
			t.Error("the handler's context does not carry the handler span")
		}
		want := map[attribute.Key]string{"sluice.priority": admission.Sheddable.String(), "sluice.tenant": "acme"}
		for _, kv := range queue.Attributes {
			if v, ok := want[kv.Key]; ok && kv.Value.AsString() == v {
				delete(want, kv.Key)
			}
		}
		if len(want) != 0 {
			t.Errorf("queue span lacks %v: %v", want, queue.Attributes)
		}
	})
}

// Without a traceparent the request span is a root.
func TestSpansWithoutCaller(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, 10)
		close(g.release)
		g.serve("/page", "")
		sc := <-g.inner
		spans := g.byName(sc.TraceID())
		if req := spans[sluiceotel.SpanRequest]; len(spans) != 3 || req.Parent.IsValid() {
			t.Errorf("got %d spans, request parent %v; want 3, a root", len(spans), req.Parent)
		}
	})
}

// A shed request's queue span ends in error, naming the reason.
func TestShedQueueSpan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, -1)
		go g.serve("/block", "")
		<-g.inner
		synctest.Wait()
		w := g.serve("/page", parent)
		if w.Code != 503 {
			t.Fatalf("got %d, want 503", w.Code)
		}
		remote, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
		spans := g.byName(remote)
		queue, req := spans[sluiceotel.SpanQueue], spans[sluiceotel.SpanRequest]
		if _, ok := spans[sluiceotel.SpanHandler]; ok || queue.Status.Code != codes.Error || req.Status.Code != codes.Error {
			t.Errorf("got spans %v, queue status %v, request status %v; want no handler span, errors", len(spans), queue.Status, req.Status)
		}
		found := false
		for _, kv := range queue.Attributes {
			found = found || kv.Key == "sluice.shed" && kv.Value.AsString() == admission.ReasonLimit.String()
		}
		if !found {
			t.Errorf("queue span attributes %v lack sluice.shed=limit", queue.Attributes)
		}
		close(g.release)
		synctest.Wait()
	})
}

// Wrap keeps the Middleware's own Observe, and leaves the Middleware as it
// was.
func TestWrapKeepsObserve(t *testing.T) {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(1), SampleWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	called := 0
	m := &admission.Middleware{Controller: c, Observe: func(*http.Request, time.Time, time.Duration, error) { called++ }}
	before := m.Observe
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(tracetest.NewInMemoryExporter()))
	h := sluiceotel.Wrap(m, http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), sluiceotel.Options{TracerProvider: tp})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil).WithContext(context.Background()))
	if called != 1 {
		t.Errorf("the Middleware's Observe was called %d times, want 1", called)
	}
	m.Observe(nil, time.Time{}, 0, nil)
	if called != 2 || before == nil {
		t.Error("Wrap changed the Middleware")
	}
}
