package app

import (
	"bufio"
	"bytes"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/testutil"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// observed returns l.observe(h, o) with l trusting peers from 10.1.0.0/16
// and proxies from 10.9.0.0/16.
func observed(h http.Handler, o observing) http.Handler {
	l := &live{}
	l.cls.Store(&admission.Classifier{
		TrustedPeers:   []netip.Prefix{netip.MustParsePrefix("10.1.0.0/16")},
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.9.0.0/16")},
	})
	return l.observe(h, o)
}

// An X-Request-Id is believed from a trusted peer or proxy only; anyone
// else's is replaced. The ID reaches the handler and the response.
func TestRequestIDTrust(t *testing.T) {
	tests := []struct {
		name, remote string
		kept         bool
	}{
		{"untrusted: replaced", "192.0.2.1:5000", false},
		{"trusted peer: kept", "10.1.2.3:5000", true},
		{"trusted proxy: kept", "10.9.2.3:5000", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var inner string
			h := observed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner = reqinfo.From(r.Context()).ID
			}), observing{})
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			r.Header.Set("X-Request-Id", "client-7")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			got := rec.Header().Get("X-Request-Id")
			if got != inner {
				t.Errorf("response says ID %q, the handler saw %q", got, inner)
			}
			if tt.kept && got != "client-7" || !tt.kept && !hex32.MatchString(got) {
				t.Errorf("got ID %q; kept %v", got, tt.kept)
			}
		})
	}
}

// proxyLike fills in the Info as the proxy does, then answers.
func proxyLike(w http.ResponseWriter, r *http.Request) {
	info := reqinfo.From(r.Context())
	info.QueueWait, info.Worker, info.WorkerTime = 1200*time.Microsecond, 3, 35*time.Millisecond
	w.WriteHeader(http.StatusCreated)
	w.Write([]byte("hello"))
}

func TestServerTiming(t *testing.T) {
	for _, on := range []bool{false, true} {
		rec := httptest.NewRecorder()
		observed(http.HandlerFunc(proxyLike), observing{serverTiming: on}).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		got := rec.Header().Get("Server-Timing")
		if want := "queue;dur=1.2, worker;dur=35.0"; on && got != want || !on && got != "" {
			t.Errorf("serverTiming %v: got %q, want %q", on, got, want)
		}
	}
	// Shed, never dispatched: the queue wait alone.
	rec := httptest.NewRecorder()
	observed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqinfo.From(r.Context()).QueueWait = 2 * time.Second
		admission.WriteShed(w, admission.ReasonQueueTimeout, time.Second)
	}), observing{serverTiming: true}).ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if got, want := rec.Header().Get("Server-Timing"), "queue;dur=2000.0"; got != want {
		t.Errorf("shed: got %q, want %q", got, want)
	}
}

func TestAccessLogJSON(t *testing.T) {
	var buf bytes.Buffer
	h := observed(http.HandlerFunc(proxyLike), observing{log: slog.New(slog.NewJSONHandler(&buf, nil))})
	r := httptest.NewRequest("POST", "/page?x=1", nil)
	r.Header.Set("Traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var got map[string]any
	if err := json.Unmarshal(buf.Bytes(), &got); err != nil {
		t.Fatalf("%v: %s", err, buf.String())

	}
	want := map[string]any{"msg": "access", "method": "POST", "path": "/page", "status": 201.0, "bytes": 5.0,
		"queue_ms": 1.2, "worker": 3.0, "worker_ms": 35.0, "shed": "", "id": rec.Header().Get("X-Request-Id"),
		"trace": "4bf92f3577b34da6a3ce929d0e0e4736", "remote": "192.0.2.1:1234"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: got %v, want %v", k, got[k], v)
		}
	}
	if ms, ok := got["ms"].(float64); !ok || ms < 0 {
		t.Errorf("ms: got %v, want the total time", got["ms"])
	}
}

func TestAccessLogText(t *testing.T) {
	var buf bytes.Buffer
	h := observed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqinfo.From(r.Context()).Shed = admission.ReasonQueueFull.String()
		admission.WriteShed(w, admission.ReasonQueueFull, time.Second)
	}), observing{log: slog.New(slog.NewTextHandler(&buf, nil))})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/page", nil))
	line := buf.String()
	for _, want := range []string{"msg=access", "method=GET", "path=/page", "status=503", "bytes=13", "queue_ms=0",
		"worker=-1", "shed=queue-full", "id=" + rec.Header().Get("X-Request-Id"), " ms="} {
		if !strings.Contains(line, want) {
			t.Errorf("access log lacks %s: %s", want, line)
		}
	}
}

// Nothing written: net/http answers 200 with no body, and so says the log.
func TestAccessLogEmptyResponse(t *testing.T) {
	var buf bytes.Buffer
	h := observed(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), observing{log: slog.New(slog.NewTextHandler(&buf, nil))})
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if !strings.Contains(buf.String(), "status=200 bytes=0") {
		t.Errorf("got %s, want status=200 bytes=0", buf.String())
	}
}

// In library mode the admission middleware's Observe fills the Info in.
func TestObserveAdmission(t *testing.T) {
	r := httptest.NewRequest("GET", "/", nil)
	ctx, info := reqinfo.New(r.Context(), time.Now(), "", "", false)
	queued := time.Now().Add(-5 * time.Millisecond)
	observeAdmission(r.WithContext(ctx), queued, 3*time.Millisecond, &admission.ShedError{Reason: admission.ReasonQueueTimeout})
	if info.QueueWait != 3*time.Millisecond || info.Shed != "queue-timeout" {
		t.Errorf("got %v %q, want 3ms queue-timeout", info.QueueWait, info.Shed)
	}
	if !info.Queued.Equal(queued) {
		t.Errorf("Queued = %v, want %v (when the wait began)", info.Queued, queued)
	}
}

// A 1xx is not the response: the final status is logged, and Server-Timing
// goes on the final header.
func TestAccessLogInformational(t *testing.T) {
	var buf testutil.Buffer
	srv := httptest.NewServer(observed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</a.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		proxyLike(w, r)
	}), observing{log: slog.New(slog.NewTextHandler(&buf, nil)), serverTiming: true}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 || resp.Header.Get("Server-Timing") == "" {
		t.Errorf("got %d, Server-Timing %q; want 201 with one", resp.StatusCode, resp.Header.Get("Server-Timing"))
	}
	srv.Close() // the handler has returned: the line is written
	if line := buf.String(); !strings.Contains(line, "status=201 bytes=5") {
		t.Errorf("got %s, want status=201 bytes=5", line)
	}
}

// A hijacked connection (a protocol switch the worker accepted) is logged
// as 101.
func TestAccessLogHijack(t *testing.T) {
	var buf bytes.Buffer
	h := observed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, _, err := http.NewResponseController(w).Hijack(); err != nil {
			t.Error(err)
		}
	}), observing{log: slog.New(slog.NewTextHandler(&buf, nil))})
	h.ServeHTTP(hijackable{httptest.NewRecorder()}, httptest.NewRequest("GET", "/ws", nil))
	if !strings.Contains(buf.String(), "status=101") {
		t.Errorf("got %s, want status=101", buf.String())
	}
}

type hijackable struct{ *httptest.ResponseRecorder }

func (hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) { return nil, nil, nil }

// server.serverTiming and server.generateTraceparent change on reload; in
// library mode the queue wait comes from the admission middleware.
func TestReloadServerTiming(t *testing.T) {
	path := writeConfig(t, `server: {listen: "127.0.0.1:0"}
admin: {listen: "off"}
`)
	s, _ := reloadService(t, path)
	serve := func() *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/?cpu=0", nil))
		return rec
	}
	if rec := serve(); rec.Header().Get("Server-Timing") != "" || !hex32.MatchString(rec.Header().Get("X-Request-Id")) {
		t.Fatalf("before: got Server-Timing %q, X-Request-Id %q; want none, an ID", rec.Header().Get("Server-Timing"), rec.Header().Get("X-Request-Id"))
	}
	rewrite(t, path, `server: {listen: "127.0.0.1:0", serverTiming: true, generateTraceparent: true}
admin: {listen: "off"}
`)
	rep, err := s.reload()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rep.Applied, "server.serverTiming") || !slices.Contains(rep.Applied, "server.generateTraceparent") || len(rep.Restart) != 0 {
		t.Errorf("got applied %q, restart %q; want both keys applied", rep.Applied, rep.Restart)
	}
	if got := serve().Header().Get("Server-Timing"); !regexp.MustCompile(`^queue;dur=\d+\.\d$`).MatchString(got) {
		t.Errorf("after: got Server-Timing %q, want the queue wait", got)
	}
}

// A request that carries an Info already (WrapFront's) keeps it: the
// handler inside sees the same one, the response carries its ID, and a
// trusted peer's X-Request-Id replaces that ID as it would have been
// chosen; an untrusted one does not.
func TestObserveReusesInfo(t *testing.T) {
	for _, tt := range []struct {
		name, remote string
		kept         bool
	}{
		{"untrusted", "192.0.2.1:5000", false},
		{"trusted peer", "10.1.2.3:5000", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var inner *reqinfo.Info
			var buf bytes.Buffer
			h := observed(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				inner = reqinfo.From(r.Context())
			}), observing{log: slog.New(slog.NewTextHandler(&buf, nil))})
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.remote
			r.Header.Set("X-Request-Id", "client-7")
			ctx, outer := reqinfo.New(r.Context(), time.Now(), "", "", false)
			made := outer.ID
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r.WithContext(ctx))
			if inner != outer {
				t.Fatal("the handler got another Info than the one the request carried")
			}
			want := made
			if tt.kept {
				want = "client-7"
			}
			if outer.ID != want || rec.Header().Get("X-Request-Id") != want {
				t.Errorf("got ID %q, response header %q; want %q", outer.ID, rec.Header().Get("X-Request-Id"), want)
			}
			if !strings.Contains(buf.String(), "id="+want) {
				t.Errorf("the access log lacks id=%s: %s", want, buf.String())
			}
		})
	}
}
