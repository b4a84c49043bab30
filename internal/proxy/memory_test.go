package proxy_test

import (
	"io"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

// trickle sends head, then nothing until gate is closed, then EOF.
type trickle struct {
	head string
	gate chan struct{}
}

func (b *trickle) Read(p []byte) (int, error) {
	if b.head != "" {
		n := copy(p, b.head)
		b.head = b.head[n:]
		return n, nil
	}
	<-b.gate
	return 0, io.ErrUnexpectedEOF
}

// Memory follows the bytes received, never the length declared: a body
// declaring more than could ever fit is refused unread, and one declaring
// 10 MB that sent one byte holds a few KiB.
func TestBodyMemoryFollowsBytesReceived(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{MaxBodyBytes: -1, MaxBufferedBytes: 64 << 20}, admission.Options{})
		g.worker(1)

		huge := httptest.NewRequest("POST", "/echo", &trickle{head: "x", gate: make(chan struct{})})
		huge.ContentLength = 1_000_000_000_000
		if code, _ := g.send(huge, nil).result(); code != 413 {
			t.Errorf("declared 1 TB with no maxBodyBytes: got %d, want 413", code)
		}

		const conns = 300
		gate := make(chan struct{})
		calls := make([]*call, conns)
		for i := range calls {
			r := httptest.NewRequest("POST", "/echo", &trickle{head: "x", gate: gate})
			r.ContentLength = 10 << 20
			calls[i] = g.send(r, nil)
		}
		synctest.Wait()
		if got, most := g.p.Stats().BufferedBytes, int64(conns*4<<10); got > most {
			t.Errorf("%d bodies of one byte received, 10 MB declared: got %d bytes held, want at most %d", conns, got, most)
		}
		close(gate)
		for _, c := range calls {
			c.result()
		}
		if got := g.p.Stats().BufferedBytes; got != 0 {
			t.Errorf("after the clients left: got %d bytes held, want 0", got)
		}
	})
}

// At the budget a new upload gets 503 and nothing else is hurt: requests
// without a body are served, and the memory comes back when the bodies
// holding it are done.
func TestBodyBudget(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget = 256 << 10
		g := newRig(t, proxy.Options{MaxBodyBytes: -1, MaxBufferedBytes: budget}, admission.Options{})
		g.worker(1)

		big := httptest.NewRequest("POST", "/echo", strings.NewReader("x"))
		big.ContentLength = budget + 1
		if code, _ := g.send(big, nil).result(); code != 413 {
			t.Errorf("body larger than the whole budget: got %d, want 413", code)
		}

		gate := make(chan struct{})
		hog := g.send(httptest.NewRequest("POST", "/echo", &gatedBody{head: strings.Repeat("h", budget-8<<10), tail: "t", gate: gate}), nil)
		synctest.Wait()
		c := g.send(httptest.NewRequest("POST", "/echo", strings.NewReader(strings.Repeat("u", 64<<10))), nil)
		code, _ := c.result()
		if code != 503 || c.w.Header().Get("Retry-After") == "" || c.w.Header().Get("Connection") != "close" {
			t.Errorf("upload at the budget: got %d %v, want 503 with Retry-After and Connection: close", code, c.w.Header())
		}
		if code, body := g.get("/a").result(); code != 200 || body != "w1 /a" {
			t.Errorf("request without a body at the budget: got %d %q, want 200", code, body)
		}
		if got := g.p.Stats().BodyNoMemory; got != 1 {
			t.Errorf("BodyNoMemory: got %d, want 1", got)
		}
		close(gate)
		// (/echo writes as it reads, and net/http stops reading a request
		// once the response has begun: the length it saw is the check.)
		if code, _ := hog.result(); code != 200 || hog.w.Header().Get("X-Got-Content-Length") != strconv.Itoa(budget-8<<10+1) {
			t.Errorf("the upload within the budget: got %d, sent with Content-Length %q, want 200 and %d", code, hog.w.Header().Get("X-Got-Content-Length"), budget-8<<10+1)
		}
		synctest.Wait()
		if got := g.p.Stats().BufferedBytes; got != 0 {
			t.Errorf("after the uploads: got %d bytes held, want 0", got)
		}
		if code, body := g.send(httptest.NewRequest("POST", "/echo", strings.NewReader("again")), nil).result(); code != 200 || body != "again" {
			t.Errorf("upload after the memory came back: got %d %q, want 200", code, body)
		}
	})
}

// A response waiting for a slow client holds memory for its bytes, not for
// the reads that brought them: a worker writing 1 KiB at a time does not
// pin a 32 KiB buffer per KiB.
func TestResponseMemoryFollowsBytes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 100 << 10
		g := newRig(t, proxy.Options{BufferResponseBytes: 1 << 20, MaxBufferedBytes: 64 << 20}, admission.Options{})
		g.worker(1)
		slow := newSink()
		slow.gate = make(chan struct{})
		c := g.send(httptest.NewRequest("GET", "/chunked?n="+strconv.Itoa(n), nil), slow)
		synctest.Wait()
		if got, most := g.p.Stats().BufferedBytes, int64(n+3*32<<10); got > most {
			t.Errorf("%d bytes waiting: got %d bytes held, want at most %d", n, got, most)
		}
		close(slow.gate)
		if code, body := c.result(); code != 200 || len(body) != n {
			t.Errorf("got %d with %d bytes, want 200 with %d", code, len(body), n)
		}
		synctest.Wait()
		if got := g.p.Stats().BufferedBytes; got != 0 {
			t.Errorf("after the response: got %d bytes held, want 0", got)
		}
	})
}

// A response that would take the buffers past the budget is relayed as a
// stream instead: complete, with the memory held near the bound.
func TestResponseOverBudgetIsStreamed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const budget, n = 128 << 10, 600_000
		g := newRig(t, proxy.Options{BufferResponseBytes: 1 << 20, MaxBufferedBytes: budget}, admission.Options{})
		g.worker(2) // the slow client holds one slot
		slow := newSink()
		slow.gate = make(chan struct{})
		c := g.send(httptest.NewRequest("GET", "/big?n="+strconv.Itoa(n), nil), slow)
		synctest.Wait()
		st := g.p.Stats()
		if st.StreamedForMemory != 1 {
			t.Errorf("StreamedForMemory: got %d, want 1", st.StreamedForMemory)
		}
		// The batch the client is stuck on, and one read buffer, may pass
		// the bound.
		if most := int64(budget + 2*32<<10); st.BufferedPeak > most {
			t.Errorf("peak held: got %d, want at most %d", st.BufferedPeak, most)
		}
		if code, _ := g.get("/b").result(); code != 200 {
			t.Errorf("another request meanwhile: got %d, want 200", code)
		}
		close(slow.gate)
		if code, body := c.result(); code != 200 || len(body) != n {
			t.Errorf("got %d with %d bytes, want 200 with %d", code, len(body), n)
		}
		synctest.Wait()
		if got := g.p.Stats().BufferedBytes; got != 0 {
			t.Errorf("after the response: got %d bytes held, want 0", got)
		}
	})
}

// Memory comes back whatever the outcome: a worker that fails before the
// client saw anything (502, or a retry), a client that leaves, a 504.
func TestBufferedMemoryComesBack(t *testing.T) {
	tests := []struct {
		name, method, path string
		leave              bool
	}{
		{"worker cut before the client saw anything", "POST", "/cut", false},
		{"GET cut and retried", "GET", "/cut", false},
		{"worker fails mid-stream", "GET", "/streamcut/k", false},
		{"client leaves mid-response", "GET", "/big?n=300000", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{BufferResponseBytes: 128 << 10}, admission.Options{})
				w, _ := g.worker(2)
				g.worker(2)
				var slow *sink
				if tt.leave {
					slow = newSink()
					slow.gate = make(chan struct{})
				}
				c := g.send(httptest.NewRequest(tt.method, tt.path, strings.NewReader("body")), slow)
				synctest.Wait()
				if tt.leave {
					c.cancel()
					close(slow.gate)
				}
				w.open("k")
				c.result()
				synctest.Wait()
				if got := g.p.Stats().BufferedBytes; got != 0 {
					t.Errorf("after the exchange: got %d bytes held, want 0", got)
				}
			})
		})
	}
}
