package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

// Requests whose framing the Proxy refuses or whose connection it closes
// (see framing.go); the end-to-end vectors are in internal/attack.
func TestRequestFraming(t *testing.T) {
	tests := []struct {
		name      string
		req       func() *http.Request
		wantCode  int
		wantClose bool
		wantSent  bool // the worker received it
	}{
		{"chunked body: connection closed after", func() *http.Request {
			r := httptest.NewRequest("POST", "/x", strings.NewReader("hello"))
			r.TransferEncoding = []string{"chunked"}
			r.ContentLength = -1
			return r
		}, 200, true, true},
		{"length-framed body: kept alive", func() *http.Request {
			return httptest.NewRequest("POST", "/x", strings.NewReader("hello"))
		}, 200, false, true},
		{"CONNECT", func() *http.Request {
			r := httptest.NewRequest("CONNECT", "/", nil)
			r.RequestURI, r.Host = "a:443", "a:443"
			return r
		}, 405, true, false},
		{"HTTP/2 preface", func() *http.Request {
			r := httptest.NewRequest("PRI", "/", nil)
			r.RequestURI, r.URL.Path = "*", "*"
			return r
		}, 400, true, false},
		{"OPTIONS *", func() *http.Request {
			r := httptest.NewRequest("OPTIONS", "/", nil)
			r.RequestURI, r.URL.Path = "*", "*"
			return r
		}, 200, false, false}, // passed on: the worker's net/http server answers it itself
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{}, admission.Options{})
				w, _ := g.worker(1)
				c := g.send(tt.req(), nil)
				code, body := c.result()
				if code != tt.wantCode {
					t.Errorf("got %d %q, want %d", code, body, tt.wantCode)
				}
				if got := c.w.Header().Get("Connection") == "close"; got != tt.wantClose {
					t.Errorf("Connection: close got %v, want %v", got, tt.wantClose)
				}
				if got := len(w.seen()) > 0; got != tt.wantSent {
					t.Errorf("the worker received it: got %v, want %v", got, tt.wantSent)
				}
			})
		})
	}
}
