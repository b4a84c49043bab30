package proxy_test

import (
	"bufio"
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/limit"
)

// The benchmarks of this file measure the proxy's own cost per request,
// apart from the front's HTTP server and any client: ServeHTTP is called
// directly with a reused request and response writer, and the worker is a
// canned-response server over loopback TCP that allocates nothing per
// request. allocs/op and B/op are then the proxy's (admission, dispatch,
// the connection to the worker, relay) and nothing else's.
//
//	go test ./internal/proxy -run '^$' -bench 'BenchmarkProxy' -count 6

// cannedWorker serves every request on every connection with resp, after
// reading the request's header (no request here has a body). It allocates
// nothing per request.
func cannedWorker(b *testing.B, resp []byte) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go serveCanned(c, resp)
		}
	}()
	return ln.Addr().String()
}

func serveCanned(c net.Conn, resp []byte) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 4<<10)
	for {
		for {
			line, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(bytes.TrimRight(line, "\r\n")) == 0 {
				break
			}
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// cannedResponse is a 200 of n bytes of contentType with a Content-Length.
func cannedResponse(contentType string, n int) []byte {
	h := "HTTP/1.1 200 OK\r\nContent-Type: " + contentType + "\r\nContent-Length: " + strconv.Itoa(n) + "\r\n\r\n"
	return append([]byte(h), bytes.Repeat([]byte("x"), n)...)
}

// discardWriter is a reusable http.ResponseWriter (and Flusher) that keeps
// the status and counts the body.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (w *discardWriter) Header() http.Header { return w.h }
func (w *discardWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *discardWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	w.n += len(p)
	return len(p), nil
}
func (w *discardWriter) Flush() {}

func (w *discardWriter) reset() {
	clear(w.h)
	w.status, w.n = 0, 0
}

// handlerProxy is a Proxy over one endpoint at addr of the given
// concurrency, admitting up to admit requests at once with no queue.
func handlerProxy(b *testing.B, addr string, concurrency, admit int) (*proxy.Proxy, *admission.Controller) {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(admit), QueueSize: -1, SampleWindow: -1})
	if err != nil {
		b.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Controller: c})
	if err != nil {
		b.Fatal(err)
	}
	p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: addr, Concurrency: concurrency})
	b.Cleanup(func() {
		p.CloseIdleConnections()
		c.Close()
	})
	return p, c
}

func benchRequest(b *testing.B) *http.Request {
	r, err := http.NewRequest(http.MethodGet, "http://front.test/api/items?page=2", nil)
	if err != nil {
		b.Fatal(err)
	}
	r.RemoteAddr = "127.0.0.1:40000"
	r.Header.Set("User-Agent", "bench/1")
	r.Header.Set("Accept", "application/json")
	return r
}

// BenchmarkProxyServe is one proxied request, sequentially: admission,
// dispatch to the worker over a kept-alive loopback connection, the
// response read whole and relayed. json is a typical 250-byte API answer,
// html an 80 KB page.
func BenchmarkProxyServe(b *testing.B) {
	for _, bc := range []struct {
		name string
		resp []byte
	}{
		{"json", cannedResponse("application/json", 250)},
		{"html", cannedResponse("text/html; charset=utf-8", 80<<10)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p, _ := handlerProxy(b, cannedWorker(b, bc.resp), 8, 16)
			r := benchRequest(b)
			w := &discardWriter{h: make(http.Header)}
			want := len(bc.resp) - bytes.Index(bc.resp, []byte("\r\n\r\n")) - 4
			b.ReportAllocs()
			cpu := testutil.ProcessCPU()
			for b.Loop() {
				w.reset()
				p.ServeHTTP(w, r)
				if w.status != http.StatusOK || w.n != want {
					b.Fatalf("got %d with %d bytes, want 200 with %d", w.status, w.n, want)
				}
			}
			testutil.ReportCPU(b, cpu)
		})
	}
}

// BenchmarkProxyServeParallel is BenchmarkProxyServe's json from many
// goroutines at once, on a worker of concurrency 64: the contended paths.
func BenchmarkProxyServeParallel(b *testing.B) {
	p, _ := handlerProxy(b, cannedWorker(b, cannedResponse("application/json", 250)), 64, 64)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := benchRequest(b)
		w := &discardWriter{h: make(http.Header)}
		for pb.Next() {
			w.reset()
			p.ServeHTTP(w, r)
			if w.status != http.StatusOK {
				b.Errorf("got %d, want 200", w.status)
				return
			}
		}
	})
}

// BenchmarkProxyShed is a request the Controller refuses at once (every
// slot taken, no queue): the 503 a front pays for under overload. It
// should cost under a tenth of BenchmarkProxyServe/json's CPU: a shed
// that costs as much as a served request sheds nothing.
func BenchmarkProxyShed(b *testing.B) {
	p, c := handlerProxy(b, cannedWorker(b, cannedResponse("application/json", 250)), 1, 1)
	held, err := c.Acquire(context.Background(), admission.Request{})
	if err != nil {
		b.Fatal(err)
	}
	defer held.Release()
	r := benchRequest(b)
	w := &discardWriter{h: make(http.Header)}
	b.ReportAllocs()
	cpu := testutil.ProcessCPU()
	for b.Loop() {
		w.reset()
		p.ServeHTTP(w, r)
		if w.status != http.StatusServiceUnavailable {
			b.Fatalf("got %d, want 503", w.status)
		}
	}
	testutil.ReportCPU(b, cpu)
}
