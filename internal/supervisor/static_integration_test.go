package supervisor_test

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
)

// runStaticReal runs a Static with fast checks against real servers and
// stops it when the test ends.
func runStaticReal(t *testing.T, o supervisor.StaticOptions) (*supervisor.Static, *testBalancer) {
	t.Helper()
	bal := newTestBalancer()
	o.Interval, o.Timeout = 10*time.Millisecond, time.Second
	st, err := supervisor.NewStatic(bal, o)
	if err != nil {
		t.Fatalf("NewStatic: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(eventWait):
			t.Errorf("Run did not return within %v of cancellation", eventWait)
		}
	})
	return st, bal
}

func TestStaticHTTPHealthChecks(t *testing.T) {
	var healthy atomic.Bool
	healthy.Store(true)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" || !healthy.Load() {
			http.Error(w, "unhealthy", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok"))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	st, bal := runStaticReal(t, supervisor.StaticOptions{
		Upstreams:  []supervisor.Endpoint{{Addr: addr, Concurrency: 8}},
		HealthPath: "/healthz", Fails: 2, Passes: 2,
	})
	bal.await(t, "add 1", eventWait)
	if !st.Ready() {
		t.Fatalf("Ready: got false, want true")
	}
	healthy.Store(false)
	bal.await(t, "remove 1", eventWait)
	if st.Ready() {
		t.Fatalf("Ready with the only upstream down: got true, want false")
	}
	if up := st.Stats().Upstreams[0]; up.Up || up.Fails < 2 || !strings.Contains(up.LastError, "503") {
		t.Errorf("Stats: got %+v, want down after 2 failures with a 503", up)
	}
	healthy.Store(true)
	bal.await(t, "add 1", eventWait)
}

func TestStaticConnectChecks(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// Accept nothing: the kernel completes connections on its own.
	st, bal := runStaticReal(t, supervisor.StaticOptions{
		Upstreams: []supervisor.Endpoint{{Addr: l.Addr().String()}},
		Fails:     1,
	})
	bal.await(t, "add 1", eventWait)
	l.Close()
	bal.await(t, "remove 1", eventWait)
	ctx, cancel := context.WithTimeout(context.Background(), eventWait)
	defer cancel()
	if err := st.Shutdown(ctx); err != nil {
		t.Errorf("Shutdown with every upstream down: got %v, want nil", err)
	}
}
