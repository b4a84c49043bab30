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
		// HTTP/2 passes :method and :path on as they came; on the HTTP/1.1
		// wire to the worker a space would split the request line.
		{"method with a space", func() *http.Request {
			r := httptest.NewRequest("GET", "/echo", nil)
			r.Method = "GET /x"
			return r
		}, 400, false, false},
		{"method with a control character", func() *http.Request {
			r := httptest.NewRequest("GET", "/echo", nil)
			r.Method = "GET\x00"
			return r
		}, 400, false, false},
		{"empty method", func() *http.Request {
			r := httptest.NewRequest("GET", "/echo", nil)
			r.Method = ""
			return r
		}, 400, false, false},
		{"token method", func() *http.Request {
			return httptest.NewRequest("M-SEARCH", "/echo", nil)
		}, 200, false, true},
		{"query with a space", func() *http.Request {
			r := httptest.NewRequest("GET", "/echo", nil)
			r.URL.RawQuery = "a=b HTTP/1.1\r\nX: y"
			return r
		}, 400, false, false},
		{"query with a tab", func() *http.Request {
			r := httptest.NewRequest("GET", "/echo", nil)
			r.URL.RawQuery = "a=\tb"
			return r
		}, 400, false, false},
		{"header fields at the bound", func() *http.Request {
			return withFields(httptest.NewRequest("GET", "/x", nil), proxy.DefaultMaxHeaderFields)
		}, 200, false, true},
		{"header fields past the bound", func() *http.Request {
			return withFields(httptest.NewRequest("GET", "/x", nil), proxy.DefaultMaxHeaderFields+1)
		}, 431, false, false},
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

// withFields gives r n header fields, all of one name as in the attack
// trial's 10,000.
func withFields(r *http.Request, n int) *http.Request {
	for range n {
		r.Header.Add("X-Many", "a")
	}
	return r
}

// Options.MaxHeaderFields sets the bound, negative none.
func TestMaxHeaderFields(t *testing.T) {
	for _, tt := range []struct {
		max, fields, want int
	}{{3, 3, 200}, {3, 4, 431}, {-1, 10_000, 200}} {
		synctest.Test(t, func(t *testing.T) {
			g := newRig(t, proxy.Options{MaxHeaderFields: tt.max}, admission.Options{})
			g.worker(1)
			if code, body := g.send(withFields(httptest.NewRequest("GET", "/x", nil), tt.fields), nil).result(); code != tt.want {
				t.Errorf("MaxHeaderFields %d, %d fields: got %d %q, want %d", tt.max, tt.fields, code, body, tt.want)
			}
		})
	}
}
