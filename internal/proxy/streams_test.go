package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

// A client that leaves a stream that never ends (an event stream, or a
// chunked one) closes the worker's connection at once: the worker learns
// it, and the slot is freed, not held while sluice drains the stream for
// nobody.
func TestStreamClientLeavesClosesWorker(t *testing.T) {
	for _, path := range []string{"/events?every=1s", "/events?every=1s&plain=1"} {
		t.Run(path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{}, admission.Options{})
				w, _ := g.worker(1)
				c := g.get(path)
				time.Sleep(3 * time.Second) // three events relayed
				synctest.Wait()
				if _, body := c.w.snapshot(); !strings.HasPrefix(body, "data: 1\n\ndata: 2\n\n") {
					t.Fatalf("got %q, want the events so far", body)
				}
				c.cancel()
				synctest.Wait()
				if !c.finished() {
					t.Fatal("handler still running after its client left")
				}
				if got := w.closed.Load(); got != 1 {
					t.Errorf("the worker saw %d closes, want 1: its connection closed when the client left", got)
				}
				st := g.p.Stats()
				if st.Outstanding != 0 || st.Streams != 0 || st.StreamsCut != 1 || st.WastedRenders != 0 {
					t.Errorf("got %d slots taken, %d streams, %d cut, %d wasted; want 0, 0, 1, 0",
						st.Outstanding, st.Streams, st.StreamsCut, st.WastedRenders)
				}
				if code, body := g.get("/next").result(); code != 200 || body != "w1 /next" {
					t.Errorf("next request: got %d %q, want 200 from the freed slot", code, body)
				}
			})
		})
	}
}

// Event streams take no render slot: a worker of concurrency 1 serves
// streams and renders at once. They count against MaxStreams instead;
// past it an event stream is refused 503 and its worker's connection
// closed.
func TestEventStreamsTakeNoRenderSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{MaxStreams: 3}, admission.Options{})
		w, _ := g.worker(1)
		var streams []*call
		for range 3 {
			streams = append(streams, g.get("/events"))
			synctest.Wait()
		}
		for i, c := range streams {
			if code, body := c.w.snapshot(); code != 200 || body != "data: 1\n\n" {
				t.Errorf("stream %d: got %d %q, want 200 and its first event", i, code, body)
			}
		}
		if code, body := g.get("/render").result(); code != 200 || body != "w1 /render" {
			t.Errorf("a render beside three streams: got %d %q, want 200", code, body)
		}
		st := g.p.Stats()
		if st.Outstanding != 0 || st.Streams != 3 || st.StreamsTotal != 3 {
			t.Errorf("got %d slots taken, %d streams (%d total); want 0, 3, 3", st.Outstanding, st.Streams, st.StreamsTotal)
		}

		code, _ := g.get("/events").result()
		synctest.Wait()
		if code != http.StatusServiceUnavailable {
			t.Errorf("a fourth stream at MaxStreams: got %d, want 503", code)
		}
		if got := w.closed.Load(); got != 1 {
			t.Errorf("the worker saw %d closes, want 1 (the refused stream's)", got)
		}
		st = g.p.Stats()
		if st.StreamsRefused != 1 || st.Streams != 3 || st.Outstanding != 0 {
			t.Errorf("got %d refused, %d streams, %d slots taken; want 1, 3, 0", st.StreamsRefused, st.Streams, st.Outstanding)
		}
		for _, c := range streams {
			c.cancel()
		}
		synctest.Wait()
		if st := g.p.Stats(); st.Streams != 0 || st.Outstanding != 0 {
			t.Errorf("after the clients left: got %d streams, %d slots taken; want 0, 0", st.Streams, st.Outstanding)
		}
	})
}

// A stream other than an event stream holds its render slot for
// StreamHold, then counts as a stream: a client that stops reading a
// large response does not hold a render slot past it.
func TestStalledReaderReleasesSlotAfterHold(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300_000
		g := newRig(t, proxy.Options{BufferResponseBytes: 64 << 10, StreamHold: 2 * time.Second}, admission.Options{})
		g.worker(1)
		slow := newSink()
		slow.gate = make(chan struct{})
		a := g.send(httptest.NewRequest("GET", "/big?n="+strconv.Itoa(n), nil), slow)
		time.Sleep(time.Second)
		synctest.Wait()
		if st := g.p.Stats(); st.Outstanding != 1 || st.Streams != 0 {
			t.Errorf("within StreamHold: got %d slots taken, %d streams; want 1, 0", st.Outstanding, st.Streams)
		}
		time.Sleep(time.Second + time.Millisecond)
		synctest.Wait()
		if st := g.p.Stats(); st.Outstanding != 0 || st.Streams != 1 {
			t.Errorf("past StreamHold: got %d slots taken, %d streams; want 0, 1", st.Outstanding, st.Streams)
		}
		if code, body := g.get("/b").result(); code != 200 || body != "w1 /b" {
			t.Errorf("a render beside the stalled reader: got %d %q, want 200", code, body)
		}
		close(slow.gate)
		if code, body := a.result(); code != 200 || len(body) != n {
			t.Errorf("the stalled reader: got %d with %d bytes, want 200 with %d", code, len(body), n)
		}
		synctest.Wait()
		if st := g.p.Stats(); st.Streams != 0 || st.Outstanding != 0 {
			t.Errorf("at the end: got %d streams, %d slots taken; want 0, 0", st.Streams, st.Outstanding)
		}
	})
}

// A stream silent past its idle bound, or alive past its total bound, is
// cut: the worker's connection closed, the client's cut (no clean end),
// neither counted as a hung worker. A route's bounds replace the Options'.
func TestStreamBounds(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		o        proxy.Options
		lives    time.Duration // still open then
		cutAfter time.Duration // cut by then
	}{
		{"idle", "/events", proxy.Options{StreamIdleTimeout: 10 * time.Second}, 9 * time.Second, 10*time.Second + time.Millisecond},
		{"idle past the hang rule", "/events",
			proxy.Options{Timeout: time.Second, HangGrace: time.Second, StreamIdleTimeout: 10 * time.Second}, 9 * time.Second, 10*time.Second + time.Millisecond},
		{"events keep it alive", "/events?every=5s", proxy.Options{StreamIdleTimeout: 10 * time.Second, StreamTimeout: 30 * time.Second},
			29 * time.Second, 30*time.Second + time.Millisecond},
		{"route's idle bound", "/short/events", proxy.Options{StreamIdleTimeout: time.Minute,
			SelectStreamBounds: func(r *http.Request) proxy.StreamBounds {
				if strings.HasPrefix(r.URL.Path, "/short/") {
					return proxy.StreamBounds{Idle: 3 * time.Second}
				}
				return proxy.StreamBounds{}
			}}, 2 * time.Second, 3*time.Second + time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				reported := 0
				tt.o.OnHung = func(int) { reported++ }
				g := newRig(t, tt.o, admission.Options{})
				w, _ := g.worker(1)
				path := tt.path
				if strings.HasPrefix(path, "/short/") {
					w.fail = "/events" // the worker serves /events for every path
				}
				c := g.get(path)
				time.Sleep(tt.lives)
				synctest.Wait()
				if c.finished() {
					t.Fatalf("cut at %v, want alive", tt.lives)
				}
				time.Sleep(tt.cutAfter - tt.lives)
				synctest.Wait()
				if !c.finished() {
					t.Fatalf("alive at %v, want cut", tt.cutAfter)
				}
				if !c.aborted {
					t.Error("the client's response ended cleanly, want it cut")
				}
				if got := w.closed.Load(); got != 1 {
					t.Errorf("the worker saw %d closes, want 1", got)
				}
				st := g.p.Stats()
				if st.StreamsCut != 1 || st.Hung != 0 || reported != 0 || st.Streams != 0 {
					t.Errorf("got %d cut, %d hung (%d reported), %d streams; want 1, 0 (0), 0", st.StreamsCut, st.Hung, reported, st.Streams)
				}
				if !g.p.Ready() {
					t.Error("the worker left rotation, want it routable")
				}
			})
		})
	}
}

// A stream's idle bound runs from its header: a first event later than
// the budget's hang rule allows does not make it a hung worker.
func TestStreamFirstEventAfterHangRule(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{Timeout: time.Second, HangGrace: time.Second, StreamIdleTimeout: 10 * time.Second},
			admission.Options{})
		w, _ := g.worker(1)
		w.fail = "/headers-then-wait"
		c := g.get("/x")
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if c.finished() {
			t.Fatal("the stream was cut before its idle bound")
		}
		w.open("first")
		time.Sleep(time.Second)
		synctest.Wait()
		if _, body := c.w.snapshot(); body != "data: 1\n\n" {
			t.Errorf("got %q, want the first event", body)
		}
		if st := g.p.Stats(); st.Hung != 0 || st.StreamsCut != 0 {
			t.Errorf("got %d hung, %d cut; want 0, 0", st.Hung, st.StreamsCut)
		}
	})
}
