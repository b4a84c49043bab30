package proxy

import (
	"crypto/tls"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/admission"
)

// What reaches a worker depends on what is believed of the peer: an
// untrusted client cannot name itself someone else or classify itself.
func TestOutgoingHeaderTrust(t *testing.T) {
	spoof := map[string]string{
		"Sluice-Priority":   "critical-plus",
		"Sluice-Tenant":     "victim",
		"Sluice-Anything":   "x",
		"Forwarded":         "for=203.0.113.66",
		"X-Real-Ip":         "203.0.113.66",
		"X-Client-Ip":       "203.0.113.66",
		"True-Client-Ip":    "203.0.113.66",
		"X-Forwarded-For":   "203.0.113.66",
		"X-Forwarded-Proto": "https",
		"X-Forwarded-Host":  "evil.example",
		"X-Forwarded-Port":  "443",
		"X-Kept":            "yes",
		// Set by CDNs and rewriting proxies, read by frameworks.
		"Cf-Connecting-Ip":    "203.0.113.66",
		"Fastly-Client-Ip":    "203.0.113.66",
		"X-Cluster-Client-Ip": "203.0.113.66",
		"X-Original-Url":      "/admin",
		"X-Rewrite-Url":       "/admin",
		// Read by frameworks as the request's method.
		"X-Http-Method-Override": "DELETE",
		"X-Method-Override":      "DELETE",
	}
	cdn := []string{"Cf-Connecting-Ip", "Fastly-Client-Ip", "X-Cluster-Client-Ip", "X-Original-Url", "X-Rewrite-Url", "X-Http-Method-Override", "X-Method-Override"}
	tests := []struct {
		name  string
		trust Trust
		tls   bool
		want  map[string]string // "" = absent
	}{
		{"untrusted", Trust{}, false, map[string]string{
			"Sluice-Priority": "sheddable", "Sluice-Tenant": "", "Sluice-Anything": "",
			"Forwarded": "", "X-Real-Ip": "", "X-Client-Ip": "", "True-Client-Ip": "", "X-Forwarded-Port": "",
			"X-Forwarded-For": "192.0.2.7", "X-Forwarded-Proto": "http", "X-Forwarded-Host": "front.example", "X-Kept": "yes",
		}},
		{"untrusted over TLS", Trust{}, true, map[string]string{"X-Forwarded-Proto": "https", "X-Forwarded-For": "192.0.2.7"}},
		{"trusted proxy", Trust{Proxy: true}, false, map[string]string{
			"Sluice-Priority": "sheddable", "Sluice-Tenant": "",
			"Forwarded": "for=203.0.113.66", "X-Real-Ip": "203.0.113.66", "X-Forwarded-Port": "443",
			"X-Forwarded-For": "203.0.113.66, 192.0.2.7", "X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example",
		}},
		{"trusted peer", Trust{Peer: true}, false, map[string]string{
			"Sluice-Priority": "sheddable", "Sluice-Tenant": "victim", "Sluice-Anything": "x",
			"Forwarded": "", "X-Real-Ip": "", "X-Forwarded-For": "192.0.2.7", "X-Forwarded-Proto": "http",
		}},
	}
	for _, k := range cdn {
		tests[0].want[k] = ""       // untrusted: removed
		tests[2].want[k] = spoof[k] // trusted proxy: passed on
		tests[3].want[k] = ""       // trusted peer only: removed
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "http://front.example/x", nil)
			r.RemoteAddr = "192.0.2.7:4321"
			if tt.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range spoof {
				r.Header[k] = []string{v}
			}
			r.Header["sluice-lower"] = []string{"x"} // not canonical: built in Go
			h := outgoingHeader(r, admission.Request{Priority: admission.Sheddable}, tt.trust, false)
			for k, want := range tt.want {
				if got := h.Get(k); got != want {
					t.Errorf("%s: got %q, want %q", k, got, want)
				}
			}
			//lint:ignore SA1008 a non-canonical key is what this case is about
			if _, ok := h["sluice-lower"]; ok && !tt.trust.Peer {
				t.Error("sluice-lower (non-canonical) reached the worker from an untrusted peer")
			}
		})
	}
}

// Fallbacks match paths as routes do: cleaned, any case.
func TestLongestPrefixMatchesAsRoutes(t *testing.T) {
	fbs := []Fallback{{PathPrefix: "/"}, {PathPrefix: "/api"}}
	for _, p := range []string{"/api/x", "/API/x", "//api/x", "/x/../api/x"} {
		if got := longestPrefix(fbs, p); got != &fbs[1] {
			t.Errorf("path %q: got fallback %q, want /api", p, got.PathPrefix)
		}
	}
	if got := longestPrefix(fbs, "/other"); got != &fbs[0] {
		t.Errorf("path /other: got fallback %q, want /", got.PathPrefix)
	}
}

// A header name with an underscore never reaches a worker by default, and
// with underscores allowed only when, "_" read as "-", it is no header
// sluice strips, sets or frames by: CGI-style workers read X_Forwarded_For
// as X-Forwarded-For.
func TestOutgoingHeaderUnderscores(t *testing.T) {
	spoof := []string{
		"X_Forwarded_For", "X_Real_IP", "X_Forwarded_Proto", "x_forwarded-host",
		"Sluice_Priority", "Sluice_Tenant", "sluice_timeout",
		"Transfer_Encoding", "Content_Length", "Proxy_Authorization", "Connection_",
		"CF_Connecting_IP", "X_Original_URL", "X_Request_Id", "Host_",
	}
	trusts := []Trust{{}, {Peer: true, Proxy: true}}
	for _, underscores := range []bool{false, true} {
		for _, trust := range trusts {
			t.Run(fmt.Sprintf("underscores %v, trust %+v", underscores, trust), func(t *testing.T) {
				r := httptest.NewRequest("GET", "http://front.example/x", nil)
				r.RemoteAddr = "192.0.2.7:4321"
				for _, k := range spoof {
					r.Header[k] = []string{"203.0.113.66"}
				}
				r.Header["My_Header"] = []string{"kept?"}
				r.Header["Connection_"] = []string{"x"} // "Connection-" is no header: kept when allowed
				h := outgoingHeader(r, admission.Request{}, trust, underscores)
				for _, k := range spoof {
					if k == "Connection_" || k == "Host_" {
						continue
					}
					if _, ok := h[k]; ok {
						t.Errorf("%s reached the worker", k)
					}
				}
				for _, k := range []string{"My_Header", "Connection_", "Host_"} {
					if _, ok := h[k]; ok != underscores {
						t.Errorf("%s reached the worker: got %v, want %v", k, ok, underscores)
					}
				}
				if got := h.Get("X-Forwarded-For"); got != "192.0.2.7" {
					t.Errorf("X-Forwarded-For: got %q, want the peer's address", got)
				}
			})
		}
	}
}

// FuzzOutgoingHeader checks, for any header name a client sends, that
// from an untrusted client nothing reaches the worker that a worker
// folding "_" into "-" and ignoring case would read as a Sluice-* or
// forwarding header, but the ones sluice sets itself.
func FuzzOutgoingHeader(f *testing.F) {
	for _, k := range []string{"X_Forwarded_For", "sluice_priority", "SLUICE-TENANT", "cf_connecting_ip", "X-Original_URL", "Transfer_Encoding", "My_Header"} {
		f.Add(k, false)
		f.Add(k, true)
	}
	own := map[string]bool{"X-Forwarded-For": true, "X-Forwarded-Proto": true, "X-Forwarded-Host": true, admission.HeaderPriority: true}
	f.Fuzz(func(t *testing.T, name string, underscores bool) {
		r := httptest.NewRequest("GET", "http://front.example/x", nil)
		r.RemoteAddr = "192.0.2.7:4321"
		r.Header[name] = []string{"spoofed"}
		h := outgoingHeader(r, admission.Request{}, Trust{}, underscores)
		for k := range h {
			if own[k] {
				if v := h.Get(k); v == "spoofed" || strings.Contains(v, "spoofed") {
					t.Errorf("%q: the worker got %s %q", name, k, v)
				}
				continue
			}
			folded := strings.ToLower(strings.ReplaceAll(k, "_", "-"))
			if strings.HasPrefix(folded, "sluice-") || strings.HasPrefix(folded, "x-forwarded-") || isForwardingHeader(folded) {
				t.Errorf("%q: the worker got %q, which it reads as %q", name, k, folded)
			}
			if !underscores && strings.Contains(k, "_") {
				t.Errorf("%q: the worker got %q with underscores off", name, k)
			}
		}
	})
}
