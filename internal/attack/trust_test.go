package attack

import (
	"net/http"
	"sync"
	"testing"
)

// headerRecorder is an upstream that answers 200 and keeps the headers of
// the last request it got: what a worker behind sluice sees.
type headerRecorder struct {
	mu   sync.Mutex
	last http.Header
}

func (h *headerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.last = r.Header.Clone()
	h.mu.Unlock()
	w.WriteHeader(http.StatusOK)
}

func (h *headerRecorder) take() http.Header {
	h.mu.Lock()
	defer h.mu.Unlock()
	last := h.last
	h.last = nil
	return last
}

// trustSpoof is a request from a client that names itself someone else and
// classifies itself: lower-case and odd spellings included, written raw so
// no client library tidies them.
const trustSpoof = "GET /x HTTP/1.1\r\n" +
	"Host: front.example\r\n" +
	"Sluice-Priority: critical-plus\r\n" +
	"sluice-tenant: victim\r\n" +
	"Sluice-Timeout: 999999\r\n" +
	"SLUICE-ANYTHING: x\r\n" +
	"Forwarded: for=203.0.113.66;proto=https\r\n" +
	"X-Real-IP: 203.0.113.66\r\n" +
	"X-Forwarded-For: 203.0.113.66\r\n" +
	"X-Forwarded-Proto: https\r\n" +
	"X-Forwarded-Host: evil.example\r\n" +
	"Connection: close\r\n\r\n"

// An untrusted client's Sluice-*, Forwarded, X-Real-IP and its own
// X-Forwarded-For chain never reach a worker; a trusted proxy's forwarding
// headers do, but not its clients' Sluice-* headers; a trusted peer's
// Sluice-* headers do, but not its X-Forwarded-For chain.
func TestTrustSplit(t *testing.T) {
	absent := "(absent)"
	for _, tt := range []struct {
		name  string
		trust string
		want  map[string]string
	}{
		{"untrusted", "", map[string]string{
			"Sluice-Priority": "critical", "Sluice-Tenant": absent, "Sluice-Anything": absent,
			"Forwarded": absent, "X-Real-Ip": absent,
			"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http", "X-Forwarded-Host": "front.example",
		}},
		{"trusted proxy only", "  trustedProxies: [127.0.0.1]\n", map[string]string{
			"Sluice-Priority": "critical", "Sluice-Tenant": absent, "Sluice-Anything": absent,
			"Forwarded": "for=203.0.113.66;proto=https", "X-Real-Ip": "203.0.113.66",
			"X-Forwarded-For": "203.0.113.66, 127.0.0.1", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example",
		}},
		{"trusted peer only", "  trustedPeers: [127.0.0.1]\n", map[string]string{
			"Sluice-Priority": "critical-plus", "Sluice-Tenant": "victim", "Sluice-Anything": "x",
			"Forwarded": absent, "X-Real-Ip": absent,
			"X-Forwarded-For": "127.0.0.1", "X-Forwarded-Proto": "http",
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := &headerRecorder{}
			s := Start(t, "server:\n  listen: {{listen}}\n  drainDelay: 0s\n"+tt.trust+"admin: {listen: {{admin}}}\n"+Upstream(t, rec, 1))
			c := Dial(t, s.Addr)
			if code, _ := RoundTrip(t, c, trustSpoof); code != http.StatusOK {
				t.Fatalf("got %d, want 200", code)
			}
			c.Close()
			got := rec.take()
			if got == nil {
				t.Fatal("the worker got no request")
			}
			for k, want := range tt.want {
				v := absent
				if vs, ok := got[k]; ok {
					v = vs[0]
				}
				if v != want {
					t.Errorf("worker got %s %q, want %q", k, v, want)
				}
			}
			s.Stop(t)
		})
	}
}
