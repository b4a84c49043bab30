package app

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/testutil"
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

// BenchmarkShedLoopback is a shed over a real loopback connection (one
// kept-alive client, one request at a time), beside what the bare
// net/http server the evaluation suite takes for the floor
// (eval.ShedFloor in internal/eval: a 503 with Retry-After, nothing else) costs the same
// client. The client's work is in both; the difference is what sluice's
// server and handlers add to each shed. cpu-ns/op is the process's.
func BenchmarkShedLoopback(b *testing.B) {
	floor := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "1")
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, "overloaded\n")
	})
	for _, bc := range []struct {
		name  string
		serve func(b *testing.B, ln net.Listener)
	}{
		{"net-http-503", func(b *testing.B, ln net.Listener) {
			srv := &http.Server{Handler: floor, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 65 * time.Second}
			go srv.Serve(ln)
			b.Cleanup(func() { srv.Close() })
		}},
		{"sluice", func(b *testing.B, ln net.Listener) {
			a := shedApp(b, "")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- a.srv.Serve(ctx, ln) }()
			b.Cleanup(func() { a.srv.Cut(); cancel(); <-done })
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			bc.serve(b, ln)
			tr := &http.Transport{MaxIdleConnsPerHost: 1}
			b.Cleanup(tr.CloseIdleConnections)
			c := &http.Client{Transport: tr}
			url := "http://" + ln.Addr().String() + "/"
			get := func() {
				resp, err := c.Get(url)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusServiceUnavailable {
					b.Fatalf("got %d, want 503", resp.StatusCode)
				}
			}
			get() // the connection, before the measurement
			b.ReportAllocs()
			cpu := testutil.ProcessCPU()
			for b.Loop() {
				get()
			}
			testutil.ReportCPU(b, cpu)
		})
	}
}
