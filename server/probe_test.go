package server_test

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/server"
)

func TestProbes(t *testing.T) {
	var ready atomic.Bool
	s := &server.Server{
		Handler:    http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("app")) }),
		HealthPath: "/healthz",
		Ready:      ready.Load,
	}
	r := start(t, s)
	c := client(t)
	base := "http://" + r.addr

	tests := []struct {
		name       string
		method     string
		path       string
		ready      bool
		wantStatus int
		wantBody   string
	}{
		{"health GET", "GET", "/healthz", true, 200, "ok"},
		{"health GET while not ready", "GET", "/healthz", false, 200, "ok"},
		{"health HEAD", "HEAD", "/healthz", true, 200, ""},
		{"ready GET", "GET", server.DefaultReadyPath, true, 200, "ready"},
		{"ready HEAD", "HEAD", server.DefaultReadyPath, true, 200, ""},
		{"ready GET while Ready is false", "GET", server.DefaultReadyPath, false, 503, "not ready"},
		{"ready HEAD while Ready is false", "HEAD", server.DefaultReadyPath, false, 503, ""},
		{"ready POST", "POST", server.DefaultReadyPath, true, 405, "method not allowed\n"},
		{"default health path is the handler's once moved", "GET", server.DefaultHealthPath, true, 200, "app"},
		{"other paths reach the handler", "GET", "/x", true, 200, "app"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ready.Store(tc.ready)
			req, _ := http.NewRequest(tc.method, base+tc.path, nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != tc.wantStatus || string(body) != tc.wantBody {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, body, tc.wantStatus, tc.wantBody)
			}
			if tc.path == "/x" || tc.path == server.DefaultHealthPath || tc.method == "POST" {
				return
			}
			if got, want := resp.Header.Get("Content-Type"), "text/plain; charset=utf-8"; got != want {
				t.Errorf("Content-Type: got %q, want %q", got, want)
			}
			if got, want := resp.Header.Get("Cache-Control"), "no-store"; got != want {
				t.Errorf("Cache-Control: got %q, want %q", got, want)
			}
		})
	}
}

// A handler whose every call is blocked (a saturated application, or an
// admission queue that holds every request) must not delay the probes.
func TestProbesBypassSaturatedHandler(t *testing.T) {
	const blocked = 8
	entered := make(chan struct{}, blocked)
	release := make(chan struct{})
	defer close(release)
	var ready atomic.Bool
	ready.Store(true)
	s := &server.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			entered <- struct{}{}
			<-release
		}),
		Ready: ready.Load,
	}
	r := start(t, s)
	base := "http://" + r.addr
	for range blocked {
		c := client(t)
		go func() {
			resp, err := c.Get(base + "/work")
			if err == nil {
				resp.Body.Close()
			}
		}()
	}
	for range blocked {
		recv(t, entered, "the handler to be saturated")
	}

	c := client(t)
	tests := []struct {
		method, path string
		ready        bool
		wantStatus   int
	}{
		{"GET", server.DefaultHealthPath, true, 200},
		{"HEAD", server.DefaultHealthPath, true, 200},
		{"GET", server.DefaultReadyPath, true, 200},
		{"HEAD", server.DefaultReadyPath, true, 200},
		{"GET", server.DefaultReadyPath, false, 503},
		{"GET", server.DefaultHealthPath, false, 200},
	}
	for _, tc := range tests {
		ready.Store(tc.ready)
		req, _ := http.NewRequest(tc.method, base+tc.path, nil)
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		// Read to the end, or the transport closes the connection
		// instead of keeping it for the next probe.
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.wantStatus {
			t.Errorf("%s %s (ready %v): got %d, want %d", tc.method, tc.path, tc.ready, resp.StatusCode, tc.wantStatus)
		}
	}
	if got := s.Conns().Open; got < blocked+1 {
		t.Errorf("open connections: got %d, want at least %d", got, blocked+1)
	}
}
