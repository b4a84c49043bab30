package app

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// proxy.pingPath is answered by sluice itself, alike in both modes: 200
// "pong", whatever the method, never admitted (the Controller counts
// nothing) nor sent to a worker. Another path, or the ping path off, goes
// on to the mode's handler.
func TestPing(t *testing.T) {
	const front = "upstreams: {servers: [\"127.0.0.1:1\"]}\n" // never up: only sluice itself answers
	for _, tt := range []struct {
		name, yaml, target string
		wantCode           int
		wantBody           string
	}{
		{"library", "", "/ping", 200, "pong\n"},
		{"library, any query", "", "/ping?x=1", 200, "pong\n"},
		{"front", front, "/ping", 200, "pong\n"},
		{"front, custom", front + "proxy: {pingPath: /_ping}\n", "/_ping", 200, "pong\n"},
		{"front, custom leaves /ping to the workers", front + "proxy: {pingPath: /_ping}\n", "/ping", 503, ""},
		{"front, off", front + "proxy: {pingPath: \"\"}\n", "/ping", 503, ""},
		{"library, off", "proxy: {pingPath: \"\"}\n", "/ping", 200, page},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("t", []byte("admin: {listen: \"off\"}\n"+tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(Options{Config: cfg, Library: testLibrary})
			if err != nil {
				t.Fatal(err)
			}
			defer a.ctrl.Close()
			rec := httptest.NewRecorder()
			a.srv.Handler.ServeHTTP(rec, httptest.NewRequest("POST", tt.target, strings.NewReader("x")))
			if rec.Code != tt.wantCode || tt.wantBody != "" && rec.Body.String() != tt.wantBody {
				t.Fatalf("got %d %q, want %d %q", rec.Code, rec.Body, tt.wantCode, tt.wantBody)
			}
			st := a.ctrl.Stats()
			admitted := st.Admitted
			for _, n := range st.Shed {
				admitted += n
			}
			if tt.wantBody == "pong\n" {
				if h := rec.Header(); h.Get("Content-Type") != "text/plain; charset=utf-8" || h.Get("Cache-Control") != "no-store" {
					t.Errorf("headers: got %v, want text/plain and no-store", h)
				}
				if admitted != 0 {
					t.Errorf("a ping reached the Controller (%d requests)", admitted)
				}
			} else if admitted == 0 {
				t.Errorf("the request did not reach the Controller")
			}
		})
	}
}
