package admin_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/internal/admin"
)

func TestGuard(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		method  string
		host    string
		headers map[string]string
		want    int
	}{
		{"loopback curl", nil, "POST", "127.0.0.1:9090", nil, http.StatusAccepted},
		{"localhost", nil, "POST", "localhost:9090", nil, http.StatusAccepted},
		{"IPv6 loopback", nil, "POST", "[::1]:9090", nil, http.StatusAccepted},
		{"same-origin browser", nil, "POST", "127.0.0.1:9090", map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://127.0.0.1:9090"}, http.StatusAccepted},
		{"cross-site browser", nil, "POST", "127.0.0.1:9090", map[string]string{"Sec-Fetch-Site": "cross-site", "Origin": "http://evil.example"}, http.StatusForbidden},
		{"same-site is another origin", nil, "POST", "127.0.0.1:9090", map[string]string{"Sec-Fetch-Site": "same-site"}, http.StatusForbidden},
		{"foreign Origin, no Sec-Fetch-Site", nil, "POST", "127.0.0.1:9090", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"DNS rebinding: foreign Host", nil, "POST", "evil.example:9090", nil, http.StatusForbidden},
		{"LAN address not allowed", nil, "POST", "10.0.0.5:9090", nil, http.StatusForbidden},
		{"allowed host, any case", []string{"Ops.Example"}, "POST", "ops.example:9090", nil, http.StatusAccepted},
		{"allowed host, cross-site still refused", []string{"ops.example"}, "POST", "ops.example", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusForbidden},
		{"any host", []string{"*"}, "POST", "whatever.example", nil, http.StatusAccepted},
		{"reads pass: foreign Host", nil, "GET", "10.0.0.5:9090", nil, http.StatusOK},
		{"reads pass: cross-site", nil, "GET", "127.0.0.1:9090", map[string]string{"Sec-Fetch-Site": "cross-site"}, http.StatusOK},
		{"other unsafe methods guarded", nil, "DELETE", "evil.example", nil, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			called := false
			h := admin.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				called = true
				if r.Method == "GET" {
					w.WriteHeader(http.StatusOK)
					return
				}
				w.WriteHeader(http.StatusAccepted)
			}), admin.GuardOptions{AllowedHosts: tt.allowed})
			r := httptest.NewRequest(tt.method, "/workers/restart", nil)
			r.Host = tt.host
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("got %d, want %d", w.Code, tt.want)
			}
			if refused := tt.want == http.StatusForbidden; called == refused {
				t.Errorf("handler called: %v, want %v", called, !refused)
			}
		})
	}
}

// pprof's reads are guarded by Host as the writes are; the other reads are
// not, so Prometheus can scrape by address.
func TestGuardPprofByHost(t *testing.T) {
	tests := []struct {
		path    string
		allowed []string
		host    string
		want    int
	}{
		{"/debug/pprof/", nil, "127.0.0.1:9090", http.StatusOK},
		{"/debug/pprof/goroutine?debug=2", nil, "localhost:9090", http.StatusOK},
		{"/debug/pprof/cmdline", nil, "evil.example:9090", http.StatusForbidden},
		{"/debug/pprof/goroutine?debug=2", nil, "10.0.0.5:9090", http.StatusForbidden},
		{"/debug/pprof/", []string{"ops.example"}, "ops.example", http.StatusOK},
		{"/debug/pprof/", []string{"*"}, "evil.example", http.StatusOK},
		{"/metrics", nil, "10.0.0.5:9090", http.StatusOK},
		{"/stats", nil, "evil.example", http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.path+" "+tt.host, func(t *testing.T) {
			h := admin.Guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), admin.GuardOptions{AllowedHosts: tt.allowed})
			r := httptest.NewRequest("GET", tt.path, nil)
			r.Host = tt.host
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != tt.want {
				t.Errorf("got %d, want %d", w.Code, tt.want)
			}
		})
	}
}
