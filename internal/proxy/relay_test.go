package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

func TestRelayBodies(t *testing.T) {
	const buf = 64 << 10
	tests := []struct {
		method, path string
		wantLen      int
		wantCL       string // the Content-Length header the client gets
	}{
		{"GET", "/big?n=0", 0, "0"},
		{"GET", "/big?n=1", 1, "1"},
		{"GET", "/big?n=" + strconv.Itoa(buf), buf, strconv.Itoa(buf)},
		{"GET", "/big?n=300000", 300000, "300000"},
		{"GET", "/chunked?n=300000", 300000, ""},
		{"HEAD", "/big?n=5000", 0, "5000"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{BufferResponseBytes: buf}, admission.Options{})
				g.worker(1)
				c := g.send(httptest.NewRequest(tt.method, tt.path, nil), nil)
				code, body := c.result()
				if code != 200 || len(body) != tt.wantLen {
					t.Errorf("got %d with %d bytes, want 200 with %d", code, len(body), tt.wantLen)
				}
				if got := c.w.Header().Get("Content-Length"); got != tt.wantCL {
					t.Errorf("got Content-Length %q, want %q", got, tt.wantCL)
				}
			})
		})
	}
}

// A response that fits in BufferResponseBytes frees the slot as soon as
// the worker has sent it, however slowly the client reads; a larger one
// holds the slot while the client is behind.
func TestSlowClientHoldsSlotOnlyBeyondBuffer(t *testing.T) {
	tests := []struct {
		name     string
		n        int
		wantHeld bool
	}{
		{"fits", 100_000, false},
		{"exceeds", 300_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{BufferResponseBytes: 128 << 10}, admission.Options{})
				w, _ := g.worker(1)
				slow := newSink()
				slow.gate = make(chan struct{})
				a := g.send(httptest.NewRequest("GET", "/big?n="+strconv.Itoa(tt.n), nil), slow)
				synctest.Wait()
				b := g.get("/b")
				synctest.Wait()

				held := g.p.Stats().Outstanding == 1
				if held != tt.wantHeld {
					t.Errorf("slot held while the client reads nothing: got %v, want %v", held, tt.wantHeld)
				}
				if got := b.finished(); got == tt.wantHeld {
					t.Errorf("next request answered meanwhile: got %v, want %v", got, !tt.wantHeld)
				}
				close(slow.gate)
				if code, body := a.result(); code != 200 || len(body) != tt.n {
					t.Errorf("got %d with %d bytes, want 200 with %d", code, len(body), tt.n)
				}
				b.result()
				if got := w.peak.Load(); got != 1 {
					t.Errorf("worker peak %d, want 1", got)
				}
			})
		})
	}
}

func TestEventStreamIsFlushedAsItComes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)
		c := g.get("/sse/k")
		synctest.Wait()
		c.w.mu.Lock()
		flushed := c.w.flushed
		c.w.mu.Unlock()
		if flushed != "data: 1\n\n" {
			t.Errorf("got %q flushed before the second event, want the first event", flushed)
		}
		if c.finished() {
			t.Fatal("stream ended early")
		}
		w.open("k")
		if _, body := c.result(); body != "data: 1\n\ndata: 2\n\n" {
			t.Errorf("got %q, want both events", body)
		}
		if got := c.w.Header().Get("Content-Type"); got != "text/event-stream" {
			t.Errorf("got Content-Type %q, want text/event-stream", got)
		}
	})
}

func TestHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)
		r := httptest.NewRequest("GET", "http://front.example/echo?q=1", nil)
		r.RemoteAddr = "192.0.2.7:4321"
		for k, v := range map[string]string{
			"Connection":          "X-Private, Keep-Alive",
			"X-Private":           "secret",
			"Keep-Alive":          "300",
			"Proxy-Authorization": "Basic eA==",
			"Proxy-Connection":    "keep-alive",
			"Te":                  "trailers",
			"Trailer":             "X-T",
			"Upgrade":             "websocket",
			"X-Forwarded-For":     "203.0.113.9",
			"X-Forwarded-Host":    "evil.example",
			"Sluice-Timeout":      "999999",
			"Sluice-Priority":     "critical-plus",
			"X-Kept":              "yes",
			"Expect":              "100-continue",
		} {
			r.Header.Set(k, v)
		}
		g.send(r, nil).result()

		got := w.lastHeader()
		want := map[string]string{
			"X-Forwarded-For":   "192.0.2.7", // an untrusted client's own chain is dropped
			"X-Forwarded-Proto": "http",
			"X-Forwarded-Host":  "front.example",
			"Sluice-Priority":   "critical", // Classify decides, not the client
			"Sluice-Timeout":    "30000",
			"X-Kept":            "yes",
		}
		for k, v := range want {
			if got.Get(k) != v {
				t.Errorf("worker got %s %q, want %q", k, got.Get(k), v)
			}
		}
		for _, k := range []string{"Connection", "X-Private", "Keep-Alive", "Proxy-Authorization", "Proxy-Connection", "Te", "Trailer", "Upgrade", "User-Agent", "Expect"} {
			if v, ok := got[k]; ok {
				t.Errorf("worker got hop-by-hop %s %q, want none", k, v)
			}
		}
		if q := w.seen(); len(q) != 1 || q[0] != "/echo" {
			t.Errorf("worker saw %q, want [/echo]", q)
		}

		c := g.get("/hop")
		c.result()
		h := c.w.Header()
		for _, k := range []string{"Connection", "X-Private", "Keep-Alive", "Proxy-Thing"} {
			if v, ok := h[k]; ok {
				t.Errorf("client got hop-by-hop %s %q, want none", k, v)
			}
		}
		if h.Get("X-Kept") != "1" {
			t.Errorf("client got X-Kept %q, want 1", h.Get("X-Kept"))
		}
	})
}

func TestFallback(t *testing.T) {
	shell := []byte("<div id=root></div>")
	app := []byte("<div id=app></div>")
	fallbacks := []proxy.Fallback{
		{PathPrefix: "/", Body: shell},
		{PathPrefix: "/app", Status: 503, ContentType: "text/html", Body: app},
	}
	tests := []struct {
		name      string
		o         proxy.Options
		path      string
		wantCode  int
		wantBody  string
		wantKind  string // Sluice-Fallback
		wantShed  string // Sluice-Shed
		noWorkers bool
	}{
		{"shed", proxy.Options{Fallbacks: fallbacks}, "/page", 200, string(shell), "shed", "limit", false},
		{"longest prefix", proxy.Options{Fallbacks: fallbacks}, "/app/x", 503, string(app), "shed", "limit", false},
		{"no fallback: shed", proxy.Options{}, "/page", 503, "Service Busy\n", "", "limit", false},
		{"timeout", proxy.Options{Fallbacks: fallbacks, Timeout: 1e9}, "/block/b", 200, string(shell), "timeout", "", false},
		{"no worker", proxy.Options{Fallbacks: fallbacks}, "/page", 200, string(shell), "no-worker", "", true},
		{"selected by func", proxy.Options{Fallbacks: fallbacks, SelectFallback: func(*http.Request) *proxy.Fallback { return nil }},
			"/page", 503, "Service Busy\n", "", "limit", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, tt.o, admission.Options{QueueSize: -1}) // no queue: over the limit is shed
				if !tt.noWorkers {
					g.worker(1)
					g.get("/block/a") // the only slot is busy
					synctest.Wait()
				}
				path := tt.path
				if path == "/block/b" {
					g.workers[1].open("a")
					synctest.Wait()
				}
				c := g.get(path)
				code, body := c.result()
				if code != tt.wantCode || body != tt.wantBody {
					t.Errorf("got %d %q, want %d %q", code, body, tt.wantCode, tt.wantBody)
				}
				h := c.w.Header()
				if got := h.Get(proxy.HeaderFallback); got != tt.wantKind {
					t.Errorf("got Sluice-Fallback %q, want %q", got, tt.wantKind)
				}
				if got := h.Get("Sluice-Shed"); got != tt.wantShed {
					t.Errorf("got Sluice-Shed %q, want %q", got, tt.wantShed)
				}
				wantFallbacks := uint64(0)
				if tt.wantKind != "" {
					wantFallbacks = 1
					if got := h.Get("Cache-Control"); got != "no-store" {
						t.Errorf("got Cache-Control %q, want no-store", got)
					}
				}
				if got := g.p.Stats().Fallbacks; got != wantFallbacks {
					t.Errorf("got %d fallbacks, want %d", got, wantFallbacks)
				}
			})
		})
	}
}

// A worker that cannot be reached or fails mid-request: the request goes
// to another worker only when none of it was sent, and gets 502 otherwise,
// whatever its method: a worker that died of a request must not be
// followed by a second one.
func TestWorkerFailures(t *testing.T) {
	tests := []struct {
		name       string
		fail       string // the first worker's failure: "unreachable", "/die", "/cut"
		method     string
		alone      bool // no second worker
		wantCode   int
		wantSecond int // requests the second worker saw
		wantStats  failureCounts
	}{
		{"unreachable GET", "unreachable", "GET", false, 200, 1, failureCounts{DialFailures: 1}},
		{"unreachable POST", "unreachable", "POST", false, 200, 1, failureCounts{DialFailures: 1}},
		{"unreachable alone", "unreachable", "GET", true, 502, 0, failureCounts{DialFailures: 1, BadGateway: 1}},
		{"died GET not retried", "/die", "GET", false, 502, 0, failureCounts{BadGateway: 1}},
		{"died HEAD not retried", "/die", "HEAD", false, 502, 0, failureCounts{BadGateway: 1}},
		{"died POST not retried", "/die", "POST", false, 502, 0, failureCounts{BadGateway: 1}},
		{"died GET alone", "/die", "GET", true, 502, 0, failureCounts{BadGateway: 1}},
		{"cut POST before the client saw anything", "/cut", "POST", false, 502, 0, failureCounts{BadGateway: 1}},
		{"cut GET not retried", "/cut", "GET", false, 502, 0, failureCounts{BadGateway: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				g := newRig(t, proxy.Options{}, admission.Options{})
				if tt.fail == "unreachable" {
					g.nextID++
					g.p.Add(supervisorEndpoint(g.nextID, "nowhere"))
				} else {
					w, _ := g.worker(1)
					w.fail = tt.fail
				}
				second := newRender("none")
				if !tt.alone {
					second, _ = g.worker(1)
				}
				c := g.send(httptest.NewRequest(tt.method, "/x", strings.NewReader("body")), nil)
				code, body := c.result()
				if code != tt.wantCode {
					t.Errorf("got %d %q, want %d", code, body, tt.wantCode)
				}
				if got := len(second.seen()); got != tt.wantSecond {
					t.Errorf("second worker saw %d, want %d", got, tt.wantSecond)
				}
				st := g.p.Stats()
				got := failureCounts{DialFailures: st.DialFailures, BadGateway: st.BadGateway, Retries: st.Retries}
				if got != tt.wantStats {
					t.Errorf("got stats %+v, want %+v", got, tt.wantStats)
				}
				if n := g.c.Stats().Inflight; n != 0 {
					t.Errorf("got %d permits in flight after the request, want 0", n)
				}
				if n := g.p.Stats().Outstanding; n != 0 {
					t.Errorf("got %d slots taken after the request, want 0", n)
				}
			})
		})
	}
}

type failureCounts struct{ DialFailures, BadGateway, Retries uint64 }

// A worker that fails once the client has part of a streamed response: the
// client's connection is cut, so a truncated body never passes for whole.
func TestWorkerFailsMidStream(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)
		c := g.get("/streamcut/k")
		synctest.Wait()
		if _, body := c.w.snapshot(); body != "0123456789" {
			t.Fatalf("got %q before the failure, want the first 10 bytes relayed", body)
		}
		w.open("k")
		code, body := c.result()
		if !c.aborted {
			t.Errorf("handler returned normally with %d %q, want it aborted", code, body)
		}
		if got := g.p.Stats().Aborted; got != 1 {
			t.Errorf("got %d aborted, want 1", got)
		}
	})
}
