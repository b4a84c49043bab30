package attack

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// streamUpstream is a worker of endless responses, as the attack trial's
// Node.js handlers: /sse an event stream, an event every 100 ms until its
// client's connection closes (req.on('close')); /quiet one event, then
// silence until the close; /flood bytes as fast as it can write them until
// a write fails. Each reports its path on closed when its connection
// closed. Anything else is answered "ok <path>".
func streamUpstream(closed chan<- string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; p {
		case "/sse", "/quiet":
			w.Header().Set("Content-Type", "text/event-stream")
			var tick <-chan time.Time
			if p == "/sse" {
				t := time.NewTicker(100 * time.Millisecond)
				defer t.Stop()
				tick = t.C
			}
			for {
				io.WriteString(w, "data: tick\n\n")
				w.(http.Flusher).Flush()
				select {
				case <-r.Context().Done():
					closed <- p
					return
				case <-tick:
				}
			}
		case "/flood":
			w.Header().Set("Content-Type", "application/octet-stream")
			buf := make([]byte, 32<<10)
			for {
				if _, err := w.Write(buf); err != nil {
					closed <- p
					return
				}
			}
		default:
			io.WriteString(w, "ok "+p)
		}
	})
}

func streamConfig(upstream string) string {
	return `server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
proxy: {maxStreams: 3}
routes:
  - match: {pathPrefix: /quiet}
    streamIdleTimeout: 1s
` + upstream
}

// waitClosed waits, bounded, until the worker reports path's connection
// closed.
func waitClosed(t *testing.T, closed <-chan string, path string) {
	t.Helper()
	select {
	case p := <-closed:
		if p != path {
			t.Fatalf("the worker saw %s close, want %s", p, path)
		}
	case <-time.After(bound):
		t.Fatalf("the worker of %s never saw its connection close, %v after its client left", path, bound)
	}
}

// Clients that leave responses that never end (an event stream, a flood
// of bytes) free their worker at once: the worker's connection is closed,
// so that the worker learns it and stops, and its slot is freed: draining
// the stream for nobody would hold the slot as long as the stream lasts.
func TestStreamClientLeavingClosesWorker(t *testing.T) {
	closed := make(chan string, 8)
	s := Start(t, streamConfig(Upstream(t, streamUpstream(closed), 1)))

	c := Dial(t, s.Addr)
	io.WriteString(c, "GET /sse HTTP/1.1\r\nHost: sluice\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(bound))
	br := bufio.NewReader(c)
	for events := 0; events < 3; {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the event stream: %v", err)
		}
		if strings.Contains(line, "data: tick") {
			events++
		}
	}
	c.Close()
	waitClosed(t, closed, "/sse")

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr+"/flood", nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := io.CopyN(io.Discard, resp.Body, 4<<20); err != nil {
		t.Fatalf("read %d bytes of the flood: %v", n, err)
	}
	resp.Body.Close() // leaves mid-body: the connection is closed
	waitClosed(t, closed, "/flood")

	st := s.WaitStats(t, "the slot to be freed", func(st Stats) bool { return st.Proxy.Outstanding == 0 })
	if cut, _ := st.Raw["proxy"].(map[string]any)["streamsCut"].(float64); cut != 2 {
		t.Errorf("streams cut: got %v, want 2", cut)
	}
	if code, body := testutil.Get(ctx, "http://"+s.Addr+"/after"); code != 200 || body != "ok /after" {
		t.Errorf("the next request: got %d %q, want 200", code, body)
	}
	s.Stop(t)
}

// Event streams take no render slot: a worker of concurrency 1 answers a
// render while three of them are open; a fourth, past proxy.maxStreams, is
// answered 503. A route's streamIdleTimeout cuts its quiet stream.
func TestEventStreamsHoldNoRenderSlot(t *testing.T) {
	closed := make(chan string, 8)
	s := Start(t, streamConfig(Upstream(t, streamUpstream(closed), 1)))
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	get := func(path string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr+path, nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		return resp
	}
	var open []*http.Response
	for range 3 {
		resp := get("/sse")
		if resp.StatusCode != 200 {
			t.Fatalf("an event stream: got %d, want 200", resp.StatusCode)
		}
		open = append(open, resp)
	}
	if resp := get("/render"); resp.StatusCode != 200 {
		t.Errorf("a render beside three event streams: got %d, want 200", resp.StatusCode)
	} else {
		resp.Body.Close()
	}
	resp := get("/sse")
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("a fourth event stream, past proxy.maxStreams 3: got %d, want 503", resp.StatusCode)
	}
	waitClosed(t, closed, "/sse") // the refused one's
	for _, r := range open {
		r.Body.Close()
	}
	for range open {
		waitClosed(t, closed, "/sse")
	}

	// The route's idle bound: one event, then silence; cut after 1 s.
	resp = get("/quiet")
	start := time.Now()
	_, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err == nil {
		t.Error("the quiet stream ended cleanly, want it cut (a truncated stream must not look complete)")
	}
	waitClosed(t, closed, "/quiet")
	t.Logf("the quiet stream was cut %v after it began", time.Since(start).Round(time.Millisecond))
	s.WaitStats(t, "the slots to be freed", func(st Stats) bool { return st.Proxy.Outstanding == 0 })
	s.Stop(t)
}
