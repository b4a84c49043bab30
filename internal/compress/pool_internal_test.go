package compress

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
)

// clientWrites records, at each write to the client, how many encoders
// were out of the pool.
type clientWrites struct {
	hdr   http.Header
	c     *Compressor
	inUse []int64
	body  bytes.Buffer
}

func (w *clientWrites) Header() http.Header { return w.hdr }
func (w *clientWrites) WriteHeader(int)     {}
func (w *clientWrites) Write(p []byte) (int, error) {
	w.inUse = append(w.inUse, w.c.encoding.Load())
	return w.body.Write(p)
}

// TestEncoderFreeBeforeClientWrites: a page whose compressed form is
// shorter than drainAt is compressed in memory and its encoder given back
// before the first byte goes to the client, so a slow client holds a few
// KB of bytes, not an encoder's megabytes.
func TestEncoderFreeBeforeClientWrites(t *testing.T) {
	page, err := os.ReadFile("testdata/page80.html")
	if err != nil {
		t.Fatal(err)
	}
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Header().Set("Content-Length", strconv.Itoa(len(page)))
		for p := page; len(p) > 0; { // as the proxy relays: 32 KiB at a time
			n := min(32<<10, len(p))
			_, _ = w.Write(p[:n])
			p = p[n:]
		}
	}))
	for _, ae := range []string{"gzip", "br"} {
		w := &clientWrites{hdr: http.Header{}, c: c}
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", ae)
		h.ServeHTTP(w, r)
		if w.hdr.Get("Content-Encoding") != ae || w.body.Len() == 0 {
			t.Fatalf("%s: not compressed", ae)
		}
		for i, n := range w.inUse {
			if n != 0 {
				t.Errorf("%s: write %d to the client with %d encoders out, want 0", ae, i, n)
			}
		}
		if got := c.encoding.Load(); got != 0 {
			t.Errorf("%s: %d encoders out after the response, want 0", ae, got)
		}
	}
}
