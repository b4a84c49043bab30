package proxy_test

import (
	"errors"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

// failingBody returns data, then err.
type failingBody struct {
	data string
	err  error
}

func (b *failingBody) Read(p []byte) (int, error) {
	if b.data == "" {
		return 0, b.err
	}
	n := copy(p, b.data)
	b.data = b.data[n:]
	return n, nil
}

func TestRequestBody(t *testing.T) {
	tests := []struct {
		name     string
		body     io.Reader
		length   int64 // Content-Length; -1 for chunked
		wantCode int   // 0: no answer at all
		wantBody string
		wantSent bool // the worker saw the request
	}{
		{"within limit", strings.NewReader("0123456789"), 10, 200, "0123456789", true},
		{"declared too large", strings.NewReader("0123456789x"), 11, 413, "Request Entity Too Large\n", false},
		{"chunked too large", strings.NewReader("0123456789x"), -1, 413, "Request Entity Too Large\n", false},
		{"chunked within limit", strings.NewReader("0123"), -1, 200, "0123", true},
		{"read deadline", &failingBody{"01", fmt.Errorf("read: %w", os.ErrDeadlineExceeded)}, 10, 408, "Request Timeout\n", false},
		{"client gone", &failingBody{"01", io.ErrUnexpectedEOF}, 10, 0, "", false},
		{"malformed", &failingBody{"01", errors.New("bad chunk")}, -1, 400, "Bad Request\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{MaxBodyBytes: 10}, admission.Options{})
				w, _ := g.worker(1)
				r := httptest.NewRequest("POST", "/echo", tt.body)
				r.ContentLength = tt.length
				code, body := g.send(r, nil).result()
				if code != tt.wantCode || body != tt.wantBody {
					t.Errorf("got %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
				}
				if got := len(w.seen()) > 0; got != tt.wantSent {
					t.Errorf("worker saw the request: %v, want %v", got, tt.wantSent)
				}
				if got := g.c.Stats().Admitted; (got > 0) != tt.wantSent {
					t.Errorf("got %d admitted, want admission only for a complete body", got)
				}
			})
		})
	}
}

// gatedBody sends head, then waits for gate before sending tail.
type gatedBody struct {
	head, tail string
	gate       chan struct{}
}

func (b *gatedBody) Read(p []byte) (int, error) {
	if b.head != "" {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	if b.tail == "" {
		return 0, io.EOF
	}
	<-b.gate
	n := copy(p, b.tail)
	b.tail = b.tail[n:]
	return n, nil
}

// A client sending its body slowly holds no slot: with one worker of
// Concurrency 1, another client is served meanwhile.
func TestSlowBodyHoldsNoSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)
		body := &gatedBody{head: "hello", tail: "world", gate: make(chan struct{})}
		a := g.send(httptest.NewRequest("POST", "/echo", body), nil)
		synctest.Wait()
		if code, _ := g.get("/b").result(); code != 200 {
			t.Fatalf("got %d for the other client, want 200", code)
		}
		close(body.gate)
		if code, got := a.result(); code != 200 || got != "helloworld" {
			t.Errorf("got %d %q for the slow client, want 200 %q", code, got, "helloworld")
		}
		if got := w.seen(); len(got) != 2 || got[0] != "/b" {
			t.Errorf("worker saw %q, want /b first", got)
		}
	})
}
