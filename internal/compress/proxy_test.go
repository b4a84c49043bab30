package compress_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/compress"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// stuckClient is a client connection that takes nothing: its first Write
// reports itself on wrote and blocks until release is closed.
type stuckClient struct {
	hdr     http.Header
	wrote   chan struct{}
	release chan struct{}
	first   bool
	body    bytes.Buffer
}

func (s *stuckClient) Header() http.Header { return s.hdr }
func (s *stuckClient) WriteHeader(int)     {}
func (s *stuckClient) Write(p []byte) (int, error) {
	if !s.first {
		s.first = true
		close(s.wrote)
		<-s.release
	}
	return s.body.Write(p)
}

// TestCompressionOutsideTheSlot shows where the work happens when the
// Compressor wraps the proxy (as sluice serve wires it): the proxy reads a
// response of up to BufferResponseBytes from the worker into memory and
// frees the worker's slot when the worker has finished, before it writes
// the first byte to the client; the Compressor compresses in those writes,
// on the client's side. So compression, and a client slow to take the
// compressed bytes, never hold a render slot: while one client is stuck
// mid-response, a second request is served by the same single-slot worker.
func TestCompressionOutsideTheSlot(t *testing.T) {
	page := page(80 << 10)
	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		_, _ = w.Write(page)
	}))
	defer worker.Close()
	ctrl, err := admission.New(admission.Options{Limit: limit.NewFixed(8), QueueSize: 8, QueueTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer ctrl.Close()
	px, err := proxy.New(proxy.Options{Controller: ctrl, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer px.CloseIdleConnections()
	px.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: worker.Listener.Addr().String(), Concurrency: 1})
	h := mustNew(t, compress.Options{}).Wrap(px)

	stuck := &stuckClient{hdr: http.Header{}, wrote: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		r := httptest.NewRequest("GET", "/first", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		h.ServeHTTP(stuck, r)
	}()
	<-stuck.wrote // the first compressed bytes are on their way to the client
	if got := px.Stats().Outstanding; got != 0 {
		t.Errorf("slots taken while the response is compressed: got %d, want 0", got)
	}

	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/second", nil)
	r.Header.Set("Accept-Encoding", "br")
	h.ServeHTTP(rec, r)
	if rec.Code != 200 || rec.Header().Get("Content-Encoding") != "br" {
		t.Errorf("second request, first client stuck: got %d %q, want 200 br", rec.Code, rec.Header().Get("Content-Encoding"))
	}
	if got := decode(t, "br", rec.Body.Bytes()); !bytes.Equal(got, page) {
		t.Errorf("second request: decoded %d bytes, want the %d-byte page", len(got), len(page))
	}

	close(stuck.release)
	<-done
	if got := stuck.hdr.Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("first request: Content-Encoding got %q, want gzip", got)
	}
	if got := decode(t, "gzip", stuck.body.Bytes()); !bytes.Equal(got, page) {
		t.Errorf("first request: decoded %d bytes, want the %d-byte page", len(got), len(page))
	}
}
