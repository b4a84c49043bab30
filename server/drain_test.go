package server_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server"
	"golang.org/x/net/http2"
)

// slowHandler serves /slow when the test closes release, everything else at
// once.
func slowHandler(entered chan<- struct{}, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			entered <- struct{}{}
			<-release
			w.Write([]byte("slow done"))
			return
		}
		w.Write([]byte("fast"))
	})
}

// The drain over real sockets and HTTP/1.1: the request in flight when the
// drain starts completes, readiness turns at once, new requests are still
// served during the delay (told to close their connection), the listener
// closes after the delay, and Serve returns nil.
func TestDrainHTTP1(t *testing.T) {
	const drainDelay = time.Second
	entered, release, drained := make(chan struct{}, 1), make(chan struct{}), make(chan struct{})
	s := &server.Server{
		Handler:    slowHandler(entered, release),
		DrainDelay: drainDelay,
		OnDrain:    func() { close(drained) },
	}
	r := start(t, s)
	base := "http://" + r.addr

	type result struct {
		resp *http.Response
		body string
	}
	slow := make(chan result, 1)
	slowClient := client(t)
	go func() {
		resp, body := get(t, slowClient, base+"/slow")
		slow <- result{resp, body}
	}()
	recv(t, entered, "the slow request to start")

	began := time.Now()
	r.cancel()
	recv(t, drained, "OnDrain")
	c := client(t)
	if resp, body := get(t, c, base+server.DefaultReadyPath); resp.StatusCode != 503 || body != "not ready" {
		t.Errorf("readiness once draining: got %d %q, want 503 %q", resp.StatusCode, body, "not ready")
	}
	if resp, body := get(t, c, base+server.DefaultHealthPath); resp.StatusCode != 200 || body != "ok" {
		t.Errorf("liveness while draining: got %d %q, want 200 %q", resp.StatusCode, body, "ok")
	}
	resp, body := get(t, c, base+"/new")
	if resp.StatusCode != 200 || body != "fast" || !resp.Close {
		t.Errorf("new request in the drain delay: got %d %q (Connection: close %v), want 200 %q with Connection: close", resp.StatusCode, body, resp.Close, "fast")
	}

	recv(t, r.lnClosed, "the listener to close")
	if took := time.Since(began); took < drainDelay {
		t.Errorf("listener closed %v after the drain started, want at least DrainDelay %v", took, drainDelay)
	}
	if c, err := net.Dial("tcp", r.addr); err == nil {
		c.Close()
		t.Error("new connection accepted after the drain delay")
	}

	close(release)
	res := recv(t, slow, "the slow response")
	if res.resp.StatusCode != 200 || res.body != "slow done" || !res.resp.Close {
		t.Errorf("in-flight request: got %d %q (Connection: close %v), want 200 %q with Connection: close", res.resp.StatusCode, res.body, res.resp.Close, "slow done")
	}
	if err := r.wait(t); err != nil {
		t.Errorf("Serve: got %v, want nil", err)
	}
	if got := s.Conns().Open; got != 0 {
		t.Errorf("open connections after the drain: got %d, want 0", got)
	}
}

// The drain over HTTP/2, with TLS and with h2c: the connection with a
// stream in flight gets GOAWAY (no error, naming that stream as the last)
// when the listener closes, the stream then completes, the server closes
// the connection, and Serve returns nil.
func TestDrainHTTP2(t *testing.T) {
	cert, pool := selfSigned(t)
	tests := []struct {
		name string
		tls  bool
	}{
		{"TLS", true},
		{"h2c", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}, 1), make(chan struct{})
			s := &server.Server{
				Handler:    slowHandler(entered, release),
				DrainDelay: 200 * time.Millisecond,
			}
			var clientPool *x509.CertPool
			if tc.tls {
				s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
				clientPool = pool
			} else {
				s.H2C = true
			}
			r := start(t, s)
			h := dialH2(t, r.addr, clientPool)
			h.request(1, "GET", "/slow", true)
			recv(t, entered, "the slow stream to start")

			r.cancel()
			recv(t, r.lnClosed, "the listener to close")
			f := h.next()
			if f.typ != http2.FrameGoAway || f.code != http2.ErrCodeNo || f.lastStream != 1 {
				t.Fatalf("got %v frame (code %v, last stream %d), want GOAWAY NO_ERROR with last stream 1", f.typ, f.code, f.lastStream)
			}
			close(release)
			if status, body := h.response(1); status != "200" || body != "slow done" {
				t.Errorf("in-flight stream: got %s %q, want 200 %q", status, body, "slow done")
			}
			if f := h.next(); f.err == nil {
				t.Errorf("got %v frame after the last stream, want the connection closed", f.typ)
			}
			if err := r.wait(t); err != nil {
				t.Errorf("Serve: got %v, want nil", err)
			}
		})
	}
}

// A request still running at ShutdownTimeout is cut: OnCut runs first, then
// the connection closes and Serve returns ErrCut.
func TestDrainCutAtShutdownTimeout(t *testing.T) {
	const shutdownTimeout = 500 * time.Millisecond
	entered, handlerDone := make(chan struct{}, 1), make(chan struct{})
	cutSawHandlerRunning := make(chan bool, 1)
	s := &server.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			defer close(handlerDone)
			entered <- struct{}{}
			<-r.Context().Done()
		}),
		DrainDelay:      -1,
		ShutdownTimeout: shutdownTimeout,
	}
	s.OnCut = func() {
		select {
		case <-handlerDone:
			cutSawHandlerRunning <- false
		default:
			cutSawHandlerRunning <- true
		}
	}
	r := start(t, s)
	clientErr := make(chan error, 1)
	c := client(t)
	go func() {
		resp, err := c.Get("http://" + r.addr + "/stuck")
		if err == nil {
			resp.Body.Close()
		}
		clientErr <- err
	}()
	recv(t, entered, "the request to start")

	began := time.Now()
	r.cancel()
	err := r.wait(t)
	took := time.Since(began)
	if !errors.Is(err, server.ErrCut) {
		t.Fatalf("Serve: got %v, want ErrCut", err)
	}
	if took < shutdownTimeout {
		t.Errorf("cut %v after the drain started, want at least ShutdownTimeout %v", took, shutdownTimeout)
	}
	if !recv(t, cutSawHandlerRunning, "OnCut") {
		t.Error("OnCut ran after the handler had returned, want before the connections are cut")
	}
	recv(t, handlerDone, "the handler's context to be cancelled")
	if err := recv(t, clientErr, "the client"); err == nil {
		t.Error("client: got a response, want the connection cut")
	}
}
