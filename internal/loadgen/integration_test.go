package loadgen_test

// Integration tests: real sockets on 127.0.0.1, real time. Each run is
// short and its assertions leave room for a busy two-core machine.

import (
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// newLocalServer starts h on 127.0.0.1 and counts its arrivals and new
// connections. Everything stops at the test's end.
func newLocalServer(t *testing.T, h http.HandlerFunc) (srv *httptest.Server, arrivals, conns *atomic.Int64) {
	t.Helper()
	arrivals, conns = new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrivals.Add(1)
		h(w, r)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, arrivals, conns
}

func TestIntegrationOpenLoopAgainstStalledServer(t *testing.T) {
	for _, keepAlive := range []bool{true, false} {
		t.Run("keepalive="+strconv.FormatBool(keepAlive), func(t *testing.T) {
			release := make(chan struct{})
			srv, arrivals, _ := newLocalServer(t, func(w http.ResponseWriter, r *http.Request) {
				select { // stall until the client gives up
				case <-r.Context().Done():
				case <-release:
				}
			})
			t.Cleanup(func() { close(release) }) // runs before srv.Close
			const scheduled = 80
			rep, err := loadgen.Run(t.Context(), loadgen.Config{
				URL:    srv.URL,
				Phases: []loadgen.Phase{{Rate: 200, Duration: 400 * time.Millisecond}},
				// Patience enough for a starved machine to accept and
				// dispatch every connection before the client gives up.
				Timeout:           time.Second,
				DisableKeepAlives: !keepAlive,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got := arrivals.Load(); got < scheduled*8/10 {
				t.Errorf("server saw %d arrivals, want at least 80%% of %d: a stalled server slowed the sends", got, scheduled)
			}
			tot := rep.Total
			if tot.Requests != scheduled {
				t.Errorf("requests = %d, want %d", tot.Requests, scheduled)
			}
			if tot.Successes != 0 {
				t.Errorf("successes = %d, want 0: no answer came within the timeout", tot.Successes)
			}
			if got := tot.Errors[loadgen.KindTimeout]; got < scheduled*8/10 {
				t.Errorf("timeouts = %d, want at least %d; errors %v", got, scheduled*8/10, tot.Errors)
			}
		})
	}
}

func TestIntegrationErrorKinds(t *testing.T) {
	srv, _, _ := newLocalServer(t, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if shed := q.Get("shed"); shed != "" {
			w.Header().Set("Sluice-Shed", shed)
			w.Header().Set("Retry-After", "1")
		}
		code, _ := strconv.Atoi(q.Get("status"))
		if code == http.StatusFound {
			w.Header().Set("Location", "/elsewhere") // not followed
		}
		w.WriteHeader(code)
		w.Write([]byte("short body\n"))
	})
	tests := []struct {
		query    string
		wantKind string // "" for success
	}{
		{"status=503&shed=queue-full", "503:queue-full"},
		{"status=503&shed=codel", "503:codel"},
		{"status=503&shed=Not+A+Reason", "503:other"},
		{"status=503", "503"},
		{"status=429&shed=tenant", "429"},
		{"status=500", "500"},
		{"status=404", "404"},
		{"status=200", ""},
		{"status=302", ""},
	}
	mix := make([]loadgen.Weighted, len(tests))
	for i, tt := range tests {
		mix[i] = loadgen.Weighted{Value: tt.query, Weight: 1}
	}
	rep, err := loadgen.Run(t.Context(), loadgen.Config{
		URL:      srv.URL,
		Phases:   []loadgen.Phase{{Rate: 300, Duration: 500 * time.Millisecond}},
		Timeout:  5 * time.Second,
		QueryMix: mix,
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			c := rep.Classes[i]
			if c.Name != "query="+tt.query {
				t.Fatalf("class %d is %q, want %q", i, c.Name, "query="+tt.query)
			}
			if c.Stats.Requests == 0 {
				t.Fatal("never drawn")
			}
			if tt.wantKind == "" {
				if c.Stats.Successes != c.Stats.Requests {
					t.Errorf("got %d successes of %d, want all; errors %v", c.Stats.Successes, c.Stats.Requests, c.Stats.Errors)
				}
				return
			}
			if got, want := c.Stats.Errors[tt.wantKind], c.Stats.Requests; got != want || len(c.Stats.Errors) != 1 {
				t.Errorf("errors = %v, want only %s=%d", c.Stats.Errors, tt.wantKind, want)
			}
		})
	}
}

func TestIntegrationKeepAlive(t *testing.T) {
	tests := []struct {
		keepAlive bool
		check     func(conns, attempts int64) bool
		want      string
	}{
		// Any reuse at all: on a starved machine answers can be slower than
		// the 20 ms between sends, and each of those needs a new connection.
		{true, func(c, a int64) bool { return c < a }, "fewer connections than attempts"},
		{false, func(c, a int64) bool { return c == a }, "one connection per attempt"},
	}
	for _, tt := range tests {
		t.Run("keepalive="+strconv.FormatBool(tt.keepAlive), func(t *testing.T) {
			srv, _, conns := newLocalServer(t, func(w http.ResponseWriter, r *http.Request) {})
			rep, err := loadgen.Run(t.Context(), loadgen.Config{
				URL:               srv.URL,
				Phases:            []loadgen.Phase{{Rate: 50, Duration: 400 * time.Millisecond}},
				Timeout:           5 * time.Second,
				DisableKeepAlives: !tt.keepAlive,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if got, attempts := conns.Load(), rep.Total.Attempts; !tt.check(got, attempts) {
				t.Errorf("got %d connections for %d attempts, want %s", got, attempts, tt.want)
			}
		})
	}
}

func TestIntegrationLoopbackOnly(t *testing.T) {
	srv, _, _ := newLocalServer(t, func(w http.ResponseWriter, r *http.Request) {})
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	phases := []loadgen.Phase{{Rate: 20, Duration: 100 * time.Millisecond}}

	rep, err := loadgen.Run(t.Context(), loadgen.Config{
		URL: "http://localhost:" + port + "/", Phases: phases, Timeout: 5 * time.Second, LoopbackOnly: true,
	})
	if err != nil {
		t.Fatalf("Run against localhost: %v", err)
	}
	if rep.Total.Successes != rep.Total.Requests {
		t.Errorf("localhost: %d successes of %d, errors %v; want all", rep.Total.Successes, rep.Total.Requests, rep.Total.Errors)
	}

	_, err = loadgen.Run(t.Context(), loadgen.Config{
		URL: "http://192.0.2.1:" + port + "/", Phases: phases, LoopbackOnly: true,
	})
	if !errors.Is(err, loadgen.ErrNotLoopback) {
		t.Errorf("Run against 192.0.2.1: error %v, want ErrNotLoopback", err)
	}
}
