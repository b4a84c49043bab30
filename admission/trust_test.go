package admission_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// A proxy trusted for X-Forwarded-For is not trusted for Sluice-*, and a
// peer trusted for Sluice-* is not trusted for X-Forwarded-For: trusting a
// load balancer to name the client must not let the client behind it
// raise its own priority.
func TestClassifierTrustSplit(t *testing.T) {
	c := &admission.Classifier{
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		TrustedPeers:   []netip.Prefix{netip.MustParsePrefix("192.168.0.0/16")},
		Tenant:         admission.TenantKey{Kind: admission.TenantClientIP},
	}
	hdr := map[string]string{"Sluice-Priority": "critical-plus", "X-Forwarded-For": "198.51.100.7"}
	tests := []struct {
		name         string
		peer         string
		wantPriority admission.Priority
		wantTenant   string
		wantPeer     bool
		wantProxy    bool
	}{
		{"trusted proxy: client named, priority not raised", "10.1.1.1:1", admission.Critical, "198.51.100.7", false, true},
		{"trusted peer: priority raised, client not renamed", "192.168.1.1:1", admission.CriticalPlus, "192.168.1.1", true, false},
		{"nobody: neither", "203.0.113.5:1", admission.Critical, "203.0.113.5", false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for k, v := range hdr {
				r.Header.Set(k, v)
			}
			got := c.Classify(r)
			if got.Priority != tt.wantPriority || got.Tenant != tt.wantTenant {
				t.Errorf("got priority %v tenant %q, want %v %q", got.Priority, got.Tenant, tt.wantPriority, tt.wantTenant)
			}
			if p, x := c.Trusted(r), c.TrustedProxy(r); p != tt.wantPeer || x != tt.wantProxy {
				t.Errorf("got Trusted %v TrustedProxy %v, want %v %v", p, x, tt.wantPeer, tt.wantProxy)
			}
		})
	}
}

// Route prefixes match the cleaned path without regard to case, so that
// spellings a worker serves alike cannot skip the route.
func TestClassifierPathMatching(t *testing.T) {
	c := &admission.Classifier{Rules: []admission.Rule{{PathPrefix: "/api", Priority: admission.Sheddable}}}
	tests := []struct {
		target string
		want   admission.Priority
	}{
		{"/api/x", admission.Sheddable},
		{"/API/x", admission.Sheddable},
		{"/Api/X", admission.Sheddable},
		{"//api/x", admission.Sheddable},
		{"/./api/x", admission.Sheddable},
		{"/api/../api/x", admission.Sheddable},
		{"/other/../api/x", admission.Sheddable},
		{"/%61pi/x", admission.Sheddable},
		{"/%41PI/x", admission.Sheddable},
		{"/api", admission.Sheddable},
		{"/apix", admission.Sheddable}, // a prefix of the path, not of a segment
		{"/api/..", admission.Critical},
		{"/ap", admission.Critical},
		{"/x/api", admission.Critical},
		{"/", admission.Critical},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			r := httptest.NewRequest("GET", tt.target, nil)
			if got := c.Classify(r).Priority; got != tt.want {
				t.Errorf("path %q: got %v, want %v", r.URL.Path, got, tt.want)
			}
		})
	}
}

func TestCleanPath(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "/"},
		{"/", "/"},
		{"api/x", "/api/x"},
		{"/api/x/", "/api/x/"},
		{"//api//x", "/api/x"},
		{"/api/./x/", "/api/x/"},
		{"/a/b/../../api", "/api"},
		{"/../../api", "/api"},
		{"/.well-known/x", "/.well-known/x"},
	}
	for _, tt := range tests {
		if got := admission.CleanPath(tt.in); got != tt.want {
			t.Errorf("CleanPath(%q): got %q, want %q", tt.in, got, tt.want)
		}
	}
	if n := testing.AllocsPerRun(100, func() { admission.CleanPath("/api/v1/users/42") }); n != 0 {
		t.Errorf("CleanPath of a clean path: got %v allocations, want 0", n)
	}
}

// Match is the index of the first rule a request matches: method, cleaned
// path and header all count, and the order of the rules decides.
func TestClassifierMatch(t *testing.T) {
	c := &admission.Classifier{Rules: []admission.Rule{
		{Method: "POST", PathPrefix: "/api"},
		{PathPrefix: "/api", Header: "X-Beta", HeaderValue: "1"},
		{PathPrefix: "/api"},
	}}
	tests := []struct {
		method, target, header string
		want                   int
	}{
		{"POST", "/api/x", "", 0},
		{"GET", "/API/x", "", 2},
		{"GET", "/api/x", "1", 1},
		{"POST", "/api/x", "1", 0}, // first match wins
		{"GET", "/home", "", -1},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		if tt.header != "" {
			r.Header.Set("X-Beta", tt.header)
		}
		if got := c.Match(r); got != tt.want {
			t.Errorf("%s %s (X-Beta %q): got rule %d, want %d", tt.method, tt.target, tt.header, got, tt.want)
		}
	}
}

// The classifier believes the real spellings only: X_Forwarded_For and
// Sluice_Priority, which CGI-style workers read as X-Forwarded-For and
// Sluice-Priority, are nobody's, not even a trusted peer's or proxy's; a
// tenant header spelled Sluice_* is believed from trusted peers only, as
// Sluice-* is.
func TestClassifierIgnoresUnderscoreSpellings(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	hdr := map[string]string{
		"Sluice_Priority": "critical-plus", "Sluice_Timeout": "1", "X_Forwarded_For": "198.51.100.7",
		"Sluice_Tenant": "victim",
	}
	for _, tt := range []struct {
		name, peer, tenantKey, wantTenant string
	}{
		{"trusted peer and proxy, client IP tenant", "10.0.0.1:1", "clientIP", "10.0.0.1"},
		{"untrusted, Sluice_Tenant tenant", "203.0.113.5:1", "header:Sluice_Tenant", ""},
		{"untrusted, sluice_tenant tenant", "203.0.113.5:1", "header:sluice_tenant", ""},
		{"trusted peer, Sluice_Tenant tenant", "10.0.0.1:1", "header:Sluice_Tenant", "victim"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			key, err := admission.ParseTenantKey(tt.tenantKey)
			if err != nil {
				t.Fatal(err)
			}
			c := &admission.Classifier{TrustedPeers: trusted, TrustedProxies: trusted, Tenant: key}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for k, v := range hdr {
				r.Header.Set(k, v) // canonical, as net/http's server keys it
			}
			got := c.Classify(r)
			if got.Priority != admission.Critical || !got.Deadline.IsZero() || got.Tenant != tt.wantTenant {
				t.Errorf("got priority %v, deadline %v, tenant %q; want %v, none, %q", got.Priority, got.Deadline, got.Tenant, admission.Critical, tt.wantTenant)
			}
		})
	}
}

// What a trusted peer asks for replaces the rule's priority and shortens,
// never lengthens, its timeout; what does not parse is ignored.
func TestApplyTrusted(t *testing.T) {
	const rule = 2 * time.Second
	tests := []struct {
		name             string
		timeout          time.Duration
		priority, budget string
		wantPriority     admission.Priority
		wantTimeout      time.Duration
	}{
		{"nothing asked", rule, "", "", admission.Sheddable, rule},
		{"a priority", rule, "critical-plus", "", admission.CriticalPlus, rule},
		{"a shorter budget", rule, "", "500", admission.Sheddable, 500 * time.Millisecond},
		{"a longer budget", rule, "", "60000", admission.Sheddable, rule},
		{"a budget without a rule timeout", 0, "", "60000", admission.Sheddable, time.Minute},
		{"an unknown priority", rule, "urgent", "", admission.Sheddable, rule},
		{"a negative budget", rule, "", "-5", admission.Sheddable, rule},
		{"a zero budget", rule, "", "0", admission.Sheddable, rule},
		{"a zero budget without a rule timeout", 0, "", "0", admission.Sheddable, 0},
		{"a budget in seconds", rule, "", "1s", admission.Sheddable, rule},
		{"a budget past time.Duration", 0, "", "9223372036854775807", admission.Sheddable, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, d := admission.ApplyTrusted(admission.Sheddable, tt.timeout, tt.priority, tt.budget)
			if p != tt.wantPriority || d != tt.wantTimeout {
				t.Errorf("got %v %v, want %v %v", p, d, tt.wantPriority, tt.wantTimeout)
			}
		})
	}
}

// A Sluice-* name in any case, "_" for "-", is a header believed from
// trusted peers only.
func TestIsSluiceHeader(t *testing.T) {
	for name, want := range map[string]bool{
		"Sluice-Tenant": true, "sluice-tenant": true, "SLUICE_TENANT": true, "Sluice-": true,
		"X-Sluice-Tenant": false, "Sluice": false, "Sluicetenant": false, "": false,
	} {
		if got := admission.IsSluiceHeader(name); got != want {
			t.Errorf("IsSluiceHeader(%q): got %v, want %v", name, got, want)
		}
	}
}
