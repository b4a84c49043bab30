package compress_test

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"

	"github.com/sluicehq/sluice/internal/compress"
)

// get sends GET / with Accept-Encoding ae and returns the response, its
// body decoded and read a line at a time.
func get(t *testing.T, url, ae string) (*http.Response, *bufio.Reader) {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", ae)
	// The transport must not decode (nor ask for gzip) itself.
	tr := &http.Transport{DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	res, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	var rd io.Reader
	switch ce := res.Header.Get("Content-Encoding"); ce {
	case "gzip":
		zr, err := gzip.NewReader(res.Body)
		if err != nil {
			t.Fatal(err)
		}
		rd = zr
	case "br":
		rd = brotli.NewReader(res.Body)
	default:
		t.Fatalf("Content-Encoding: got %q, want %q", ce, ae)
	}
	return res, bufio.NewReader(rd)
}

// TestStreamFlushReachesClient: what a streaming handler flushes reaches
// the client, decoded, while the handler is still running: the handler
// writes the rest only after the client has read the first part.
func TestStreamFlushReachesClient(t *testing.T) {
	for _, ae := range []string{"gzip", "br"} {
		t.Run(ae, func(t *testing.T) {
			read := make(chan struct{})
			c := mustNew(t, compress.Options{})
			srv := httptest.NewServer(c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html; charset=utf-8")
				_, _ = io.WriteString(w, "<html><head><title>shell</title></head>\n")
				if err := http.NewResponseController(w).Flush(); err != nil {
					t.Errorf("flush: %v", err)
				}
				select {
				case <-read:
				case <-r.Context().Done():
					return
				}
				_, _ = w.Write(page(64 << 10))
				_, _ = io.WriteString(w, "\n</html>\n")
			})))
			defer srv.Close()

			_, body := get(t, srv.URL, ae)
			line, err := body.ReadString('\n')
			if err != nil || line != "<html><head><title>shell</title></head>\n" {
				t.Fatalf("first part: got %q, %v", line, err)
			}
			close(read)
			rest, err := io.ReadAll(body)
			if err != nil {
				t.Fatalf("rest: %v", err)
			}
			if !strings.HasSuffix(string(rest), "</html>\n") || len(rest) != 64<<10+len("\n</html>\n") {
				t.Errorf("rest: got %d bytes, want %d ending </html>", len(rest), 64<<10+9)
			}
		})
	}
}

// TestAbortLeavesStreamUnfinished: a handler that aborts mid-response (as
// the proxy does when a worker fails mid-body) must not get a compressed
// stream's trailer written for it: what was sent decodes as truncated, not
// as a complete shorter body. (Over HTTP/1.1 chunked framing and HTTP/2
// resets tell the client too; the encoding must not contradict them, and
// a cache or a client reading a closed connection to its end has only the
// encoding to go by.)
func TestAbortLeavesStreamUnfinished(t *testing.T) {
	for _, ae := range []string{"gzip", "br"} {
		t.Run(ae, func(t *testing.T) {
			c := mustNew(t, compress.Options{})
			h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/html")
				_, _ = w.Write(page(32 << 10))
				w.(http.Flusher).Flush()
				panic(http.ErrAbortHandler)
			}))
			rec := httptest.NewRecorder()
			r := httptest.NewRequest("GET", "/", nil)
			r.Header.Set("Accept-Encoding", ae)
			func() {
				defer func() {
					if v := recover(); v != http.ErrAbortHandler {
						t.Errorf("recovered %v, want http.ErrAbortHandler passed on", v)
					}
				}()
				h.ServeHTTP(rec, r)
			}()
			var rd io.Reader = brotli.NewReader(rec.Body)
			if ae == "gzip" {
				zr, err := gzip.NewReader(rec.Body)
				if err != nil {
					t.Fatal(err)
				}
				rd = zr
			}
			got, err := io.ReadAll(rd)
			if err == nil {
				t.Fatalf("decoded %d bytes and a clean end, want a truncation error", len(got))
			}
			if len(got) > 32<<10 {
				t.Errorf("decoded %d bytes, want at most the %d written", len(got), 32<<10)
			}
		})
	}
}
