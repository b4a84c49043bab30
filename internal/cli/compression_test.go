package cli

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// TestServeCompresses runs the built front before an upstream: a buffered
// page is compressed by the client's choice of encoding, and a streamed
// one reaches the client compressed, flush by flush: its first part is read
// while the upstream is still waiting to send the rest.
func TestServeCompresses(t *testing.T) {
	page := bytes.Repeat([]byte("<div class=\"card\">a listing, rendered</div>\n"), 2000) // 88 KB
	more := make(chan struct{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		if r.URL.Path != "/stream" {
			w.Header().Set("Content-Length", strconv.Itoa(len(page)))
			_, _ = w.Write(page)
			return
		}
		_, _ = io.WriteString(w, "<html><head><title>shell</title></head>\n")
		w.(http.Flusher).Flush()
		select {
		case <-more:
		case <-r.Context().Done():
			return
		}
		_, _ = w.Write(page)
	})}
	go func() { _ = up.Serve(ln) }()
	t.Cleanup(func() { _ = up.Close() })

	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: "off"}
upstreams:
  servers: [{address: %q, concurrency: 1}]
  healthCheck: {interval: 50ms, timeout: 1s, fails: 1, passes: 1}
`, addr, ln.Addr().String()))
	startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}

	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	fetch := func(path, ae string) (*http.Response, *bufio.Reader) {
		t.Helper()
		req, _ := http.NewRequest("GET", "http://"+addr+path, nil)
		req.Header.Set("Accept-Encoding", ae)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { res.Body.Close() })
		if res.StatusCode != 200 || res.Header.Get("Content-Encoding") != ae || res.Header.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("%s: got %d, Content-Encoding %q, Vary %q; want 200, %s, Accept-Encoding",
				path, res.StatusCode, res.Header.Get("Content-Encoding"), res.Header.Get("Vary"), ae)
		}
		var rd io.Reader = brotli.NewReader(res.Body)
		if ae == "gzip" {
			if rd, err = gzip.NewReader(res.Body); err != nil {
				t.Fatal(err)
			}
		}
		return res, bufio.NewReader(rd)
	}

	for _, ae := range []string{"gzip", "br"} {
		_, body := fetch("/", ae)
		got, err := io.ReadAll(body)
		if err != nil || !bytes.Equal(got, page) {
			t.Errorf("%s: decoded %d bytes (%v), want the %d-byte page", ae, len(got), err, len(page))
		}
	}

	_, body := fetch("/stream", "gzip")
	line, err := body.ReadString('\n')
	if err != nil || line != "<html><head><title>shell</title></head>\n" {
		t.Fatalf("stream's first part: got %q, %v", line, err)
	}
	close(more) // only now may the upstream finish
	rest, err := io.ReadAll(body)
	if err != nil || !bytes.Equal(rest, page) {
		t.Errorf("stream's rest: decoded %d bytes (%v), want %d", len(rest), err, len(page))
	}
}
