package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
)

// shedApp is a front-mode App with the defaults (compression, the admin
// listener's response counter) whose Controller sheds every request: its
// one slot (server.maxConcurrentRequests 1, no queue) is held.
func shedApp(tb testing.TB, extra string) *App {
	tb.Helper()
	cfg, err := config.Parse("t", []byte(`upstreams: {servers: ["127.0.0.1:1"]}
admin: {listen: "127.0.0.1:0"}
server: {maxConcurrentRequests: 1, backpressure: {queueSize: 0}`+extra+`}
`))
	if err != nil {
		tb.Fatal(err)
	}
	a, err := New(Options{Config: cfg})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(a.ctrl.Close)
	a.ctrl.SetCeiling(1)
	p, err := a.ctrl.Acquire(context.Background(), admission.Request{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(p.Release)
	return a
}

// discardWriter is a ResponseWriter that keeps only the status, so that
// the benchmarks measure the handler and not a recorder.
type discardWriter struct {
	h      http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }

// BenchmarkFrontShed is what sluice's own handlers (the admin's response
// counter, request IDs, compression, the proxy, admission) cost a request
// the Controller sheds: the answer a front gives most under overload.
func BenchmarkFrontShed(b *testing.B) {
	for _, bc := range []struct{ name, extra string }{
		{"defaults", ""},
		{"accessLog+serverTiming", ", accessLog: true, serverTiming: true"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			a := shedApp(b, bc.extra)
			h := a.srv.Handler
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Accept-Encoding", "gzip, br")
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, r)
				if w.status != http.StatusServiceUnavailable || w.h.Get(admission.HeaderShed) == "" {
					b.Fatalf("got %d, shed %q; want a shed 503", w.status, w.h.Get(admission.HeaderShed))
				}
			}
		})
	}
}
