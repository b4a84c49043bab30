package compress_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"

	"github.com/sluicehq/sluice/internal/compress"
)

// page is text of the given length that compresses well.
func page(n int) []byte {
	return bytes.Repeat([]byte("<li>a listing</li>\n"), n/19+1)[:n]
}

func mustNew(t testing.TB, o compress.Options) *compress.Compressor {
	t.Helper()
	c, err := compress.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// respond returns a handler that sets headers, then writes status and body.
func respond(status int, hdr http.Header, body []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for k, v := range hdr {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}

func serve(t testing.TB, c *compress.Compressor, h http.Handler, method, ae string) *httptest.ResponseRecorder {
	t.Helper()
	r := httptest.NewRequest(method, "/", nil)
	if ae != "" {
		r.Header.Set("Accept-Encoding", ae)
	}
	rec := httptest.NewRecorder()
	c.Wrap(h).ServeHTTP(rec, r)
	return rec
}

// decode undoes the response's Content-Encoding.
func decode(t testing.TB, encoding string, body []byte) []byte {
	t.Helper()
	var rd io.Reader
	switch encoding {
	case "":
		return body
	case "gzip":
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatalf("gzip: %v", err)
		}
		rd = zr
	case "br":
		rd = brotli.NewReader(bytes.NewReader(body))
	default:
		t.Fatalf("unexpected Content-Encoding %q", encoding)
	}
	out, err := io.ReadAll(rd)
	if err != nil {
		t.Fatalf("%s: %v", encoding, err)
	}
	return out
}

func html(extra ...string) http.Header {
	h := http.Header{"Content-Type": {"text/html; charset=utf-8"}}
	for i := 0; i+1 < len(extra); i += 2 {
		h.Add(extra[i], extra[i+1])
	}
	return h
}

func withLength(h http.Header, n int) http.Header {
	h.Set("Content-Length", strconv.Itoa(n))
	return h
}

func TestCompresses(t *testing.T) {
	body := page(80 << 10)
	c := mustNew(t, compress.Options{})
	for _, tt := range []struct {
		name, ae, want string
		hdr            http.Header
	}{
		{"gzip, length known", "gzip", "gzip", withLength(html(), len(body))},
		{"gzip, length unknown", "gzip", "gzip", html()},
		{"br, length known", "gzip, deflate, br, zstd", "br", withLength(html(), len(body))},
		{"br, length unknown", "br", "br", html()},
		{"json", "gzip", "gzip", http.Header{"Content-Type": {"application/json"}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, c, respond(200, tt.hdr, body), "GET", tt.ae)
			h := rec.Result().Header
			if got := h.Get("Content-Encoding"); got != tt.want {
				t.Fatalf("Content-Encoding: got %q, want %q", got, tt.want)
			}
			if got := h.Get("Content-Length"); got != "" {
				t.Errorf("Content-Length: got %q, want none", got)
			}
			if got := h.Values("Vary"); !slices.Equal(got, []string{"Accept-Encoding"}) {
				t.Errorf("Vary: got %q, want [Accept-Encoding]", got)
			}
			if rec.Body.Len() > len(body)/5 {
				t.Errorf("compressed to %d bytes of %d, want less than a fifth", rec.Body.Len(), len(body))
			}
			if got := decode(t, tt.want, rec.Body.Bytes()); !bytes.Equal(got, body) {
				t.Errorf("decoded body differs: %d bytes, want %d", len(got), len(body))
			}
		})
	}
}

// TestPassesThrough lists responses that must reach the client byte for
// byte, with the headers they had.
func TestPassesThrough(t *testing.T) {
	big := page(8 << 10)
	c := mustNew(t, compress.Options{})
	for _, tt := range []struct {
		name     string
		status   int
		hdr      http.Header
		body     []byte
		wantVary bool
	}{
		{"already encoded", 200, html("Content-Encoding", "br"), big, false},
		{"already encoded, identity", 200, html("Content-Encoding", "identity"), big, false},
		{"range", 206, html("Content-Range", "bytes 0-8191/100000"), big, false},
		{"content-range on 200", 200, html("Content-Range", "bytes 0-8191/8192"), big, false},
		{"no-transform", 200, html("Cache-Control", "public, No-Transform"), big, false},
		{"type not listed", 200, http.Header{"Content-Type": {"image/png"}}, big, false},
		{"event stream", 200, http.Header{"Content-Type": {"text/event-stream"}}, big, false},
		{"no content type", 200, http.Header{}, big, false},
		{"short, length known", 200, withLength(html(), 1023), page(1023), false},
		{"short, length unknown", 200, html(), page(1023), false},
		{"empty", 200, html(), nil, false},
		{"204", 204, html(), nil, false},
		{"304", 304, html("Etag", `"v1"`), nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, c, respond(tt.status, tt.hdr, tt.body), "GET", "gzip, br")
			res := rec.Result()
			if res.StatusCode != tt.status {
				t.Errorf("status: got %d, want %d", res.StatusCode, tt.status)
			}
			if got, want := res.Header.Get("Content-Encoding"), tt.hdr.Get("Content-Encoding"); got != want {
				t.Errorf("Content-Encoding: got %q, want %q", got, want)
			}
			if got := res.Header.Get("Vary") != ""; got != tt.wantVary {
				t.Errorf("Vary: got %q, want present %v", res.Header.Get("Vary"), tt.wantVary)
			}
			if got := res.Header.Get("Etag"); got != tt.hdr.Get("Etag") {
				t.Errorf("ETag: got %q, want %q", got, tt.hdr.Get("Etag"))
			}
			if !bytes.Equal(rec.Body.Bytes(), tt.body) {
				t.Errorf("body: got %d bytes, want the %d written, unchanged", rec.Body.Len(), len(tt.body))
			}
		})
	}
}

// TestThreshold: MinLength bytes and more are compressed, whether the
// length is declared or learned from the writes, in one write or many.
func TestThreshold(t *testing.T) {
	c := mustNew(t, compress.Options{MinLength: 2000})
	pieces := func(n int) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/plain")
			b := page(n)
			for len(b) > 0 { // 100-byte writes
				k := min(100, len(b))
				_, _ = w.Write(b[:k])
				b = b[k:]
			}
		})
	}
	for _, tt := range []struct {
		name string
		h    http.Handler
		want string
	}{
		{"declared below", respond(200, withLength(html(), 1999), page(1999)), ""},
		{"declared at", respond(200, withLength(html(), 2000), page(2000)), "gzip"},
		{"one write below", respond(200, html(), page(1999)), ""},
		{"one write at", respond(200, html(), page(2000)), "gzip"},
		{"writes below", pieces(1999), ""},
		{"writes at", pieces(2000), "gzip"},
		{"writes above", pieces(50_000), "gzip"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, c, tt.h, "GET", "gzip")
			if got := rec.Header().Get("Content-Encoding"); got != tt.want {
				t.Fatalf("Content-Encoding: got %q, want %q", got, tt.want)
			}
			got := decode(t, tt.want, rec.Body.Bytes())
			if n := len(got); n != 1999 && n != 2000 && n != 50_000 {
				t.Errorf("decoded %d bytes", n)
			}
		})
	}

	any := mustNew(t, compress.Options{MinLength: -1})
	if got := serve(t, any, respond(200, html(), []byte("x")), "GET", "gzip").Header().Get("Content-Encoding"); got != "gzip" {
		t.Errorf("MinLength -1, 1 byte: Content-Encoding got %q, want gzip", got)
	}
}

// TestIdentityClientGetsVary: a client that takes no encoding gets the
// response as it is, with the Vary a cache needs to keep the variants apart.
func TestIdentityClientGetsVary(t *testing.T) {
	body := page(8 << 10)
	c := mustNew(t, compress.Options{})
	for _, ae := range []string{"", "identity", "deflate", "gzip;q=0"} {
		rec := serve(t, c, respond(200, html(), body), "GET", ae)
		if got := rec.Header().Get("Content-Encoding"); got != "" {
			t.Errorf("%q: Content-Encoding got %q, want none", ae, got)
		}
		if got := rec.Header().Get("Vary"); got != "Accept-Encoding" {
			t.Errorf("%q: Vary got %q, want Accept-Encoding", ae, got)
		}
		if !bytes.Equal(rec.Body.Bytes(), body) {
			t.Errorf("%q: body changed", ae)
		}
	}
}

func TestHeaders(t *testing.T) {
	body := page(8 << 10)
	c := mustNew(t, compress.Options{})
	for _, tt := range []struct {
		name string
		hdr  http.Header
		key  string
		want []string
	}{
		{"strong ETag made weak", html("Etag", `"abc"`), "Etag", []string{`W/"abc"`}},
		{"weak ETag kept", html("Etag", `W/"abc"`), "Etag", []string{`W/"abc"`}},
		{"Accept-Ranges removed", html("Accept-Ranges", "bytes"), "Accept-Ranges", nil},
		{"Vary kept and added to", html("Vary", "Cookie"), "Vary", []string{"Cookie", "Accept-Encoding"}},
		{"Vary not repeated", html("Vary", "Cookie, accept-encoding"), "Vary", []string{"Cookie, accept-encoding"}},
		{"Vary * kept", html("Vary", "*"), "Vary", []string{"*"}},
		{"Content-Length removed", withLength(html(), len(body)), "Content-Length", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, c, respond(200, tt.hdr, body), "GET", "gzip")
			if rec.Header().Get("Content-Encoding") != "gzip" {
				t.Fatal("not compressed")
			}
			if got := rec.Result().Header.Values(tt.key); !slices.Equal(got, tt.want) {
				t.Errorf("%s: got %q, want %q", tt.key, got, tt.want)
			}
		})
	}
}

// TestHead: a HEAD response is never compressed (as nginx and gzhttp do):
// its headers describe the uncompressed representation, Content-Length
// included, with Vary where a GET's response would vary.
func TestHead(t *testing.T) {
	c := mustNew(t, compress.Options{})
	for _, tt := range []struct {
		name     string
		h        http.Handler
		wantLen  string
		wantVary string
	}{
		// A proxied HEAD: the upstream's headers, no body.
		{"declared", respond(200, withLength(html(), 80_000), nil), "80000", "Accept-Encoding"},
		{"declared short", respond(200, withLength(html(), 100), nil), "100", ""},
		// A Go handler that writes its body for HEAD too (net/http drops it).
		{"written", respond(200, html(), page(8<<10)), "", "Accept-Encoding"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := serve(t, c, tt.h, "HEAD", "gzip, br")
			h := rec.Result().Header
			if got := h.Get("Content-Encoding"); got != "" {
				t.Errorf("Content-Encoding: got %q, want none", got)
			}
			if got := h.Get("Content-Length"); tt.wantLen != "" && got != tt.wantLen {
				t.Errorf("Content-Length: got %q, want %q", got, tt.wantLen)
			}
			if got := h.Get("Vary"); got != tt.wantVary {
				t.Errorf("Vary: got %q, want %q", got, tt.wantVary)
			}
		})
	}
}

// TestUpgradeUntouched: a request to switch protocols reaches the handler
// with the connection's own writer.
func TestUpgradeUntouched(t *testing.T) {
	c := mustNew(t, compress.Options{})
	var inner http.ResponseWriter
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { inner = w })
	rec := httptest.NewRecorder()
	r := httptest.NewRequest("GET", "/ws", nil)
	r.Header.Set("Connection", "Upgrade")
	r.Header.Set("Upgrade", "websocket")
	r.Header.Set("Accept-Encoding", "gzip")
	c.Wrap(h).ServeHTTP(rec, r)
	if inner != http.ResponseWriter(rec) {
		t.Errorf("the handler got %T, want the server's own writer", inner)
	}
}

// recorder logs the calls a ResponseWriter gets.
type recorder struct {
	hdr   http.Header
	calls []string
	body  bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.hdr }
func (r *recorder) WriteHeader(code int) {
	r.calls = append(r.calls, "WriteHeader "+strconv.Itoa(code))
}
func (r *recorder) Write(p []byte) (int, error) {
	r.calls = append(r.calls, "Write")
	return r.body.Write(p)
}
func (r *recorder) Flush() { r.calls = append(r.calls, "Flush") }

// TestInformational: a 1xx goes out at once; the final status is decided
// after it.
func TestInformational(t *testing.T) {
	c := mustNew(t, compress.Options{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload; as=style")
		w.WriteHeader(http.StatusEarlyHints)
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write(page(4 << 10))
	})
	rec := &recorder{hdr: http.Header{}}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept-Encoding", "gzip")
	c.Wrap(h).ServeHTTP(rec, r)
	if len(rec.calls) < 3 || rec.calls[0] != "WriteHeader 103" || rec.calls[1] != "WriteHeader 200" {
		t.Fatalf("calls: got %q, want WriteHeader 103, WriteHeader 200, Write...", rec.calls)
	}
	if got := rec.hdr.Get("Content-Encoding"); got != "gzip" {
		t.Errorf("final response: Content-Encoding got %q, want gzip", got)
	}
	if got := decode(t, "gzip", rec.body.Bytes()); len(got) != 4<<10 {
		t.Errorf("decoded %d bytes, want %d", len(got), 4<<10)
	}
}

// TestFlushSendsHeld: a flush before MinLength bytes sends them: a stream
// cannot wait for its length.
func TestFlushSendsHeld(t *testing.T) {
	c := mustNew(t, compress.Options{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><head>"))
		w.(http.Flusher).Flush()
		_, _ = w.Write([]byte("</head></html>"))
	})
	rec := &recorder{hdr: http.Header{}}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept-Encoding", "br")
	c.Wrap(h).ServeHTTP(rec, r)
	want := []string{"WriteHeader 200", "Write", "Flush"}
	if len(rec.calls) < 3 || !slices.Equal(rec.calls[:3], want) {
		t.Fatalf("calls: got %q, want %q first", rec.calls, want)
	}
	if got := string(decode(t, "br", rec.body.Bytes())); got != "<html><head></head></html>" {
		t.Errorf("decoded %q", got)
	}
	if got := rec.hdr.Get("Content-Encoding"); got != "br" {
		t.Errorf("Content-Encoding: got %q, want br", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	if err := (compress.Options{}).Validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
	bad := compress.Options{
		GzipLevel:   10,
		BrotliLevel: -1,
		Encodings:   []string{"zstd", "gzip", "gzip"},
		Types:       []string{"text", "*/*", "text/html; charset=utf-8", "application/x*"},
	}
	err := bad.Validate()
	if err == nil {
		t.Fatal("got nil, want errors")
	}
	for _, want := range []string{"GzipLevel 10", "BrotliLevel -1", `"zstd"`, `"gzip" is listed twice`,
		`"text" is not`, `"*/*"`, "without parameters", `"application/x*"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if _, err := compress.New(compress.Options{Encodings: []string{}}); err == nil {
		t.Error("New with empty Encodings: got nil error")
	}
}
