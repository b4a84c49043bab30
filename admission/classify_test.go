package admission_test

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
)

func TestClassifierTrust(t *testing.T) {
	now := time.Unix(1000, 0)
	c := &admission.Classifier{
		TrustedPeers: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
		Rules: []admission.Rule{
			{PathPrefix: "/batch/", Priority: admission.Sheddable, Cost: 4, Timeout: 2 * time.Second},
			{Method: "POST", PathPrefix: "/checkout", Priority: admission.CriticalPlus},
			{Header: "X-Prefetch", HeaderValue: "1", Priority: admission.SheddablePlus},
		},
		Tenant: admission.TenantKey{Kind: admission.TenantHeader, Name: "Sluice-Tenant"},
		Now:    func() time.Time { return now },
	}
	tests := []struct {
		name    string
		method  string
		path    string
		peer    string
		headers map[string]string
		want    admission.Request
	}{
		{"default", "GET", "/", "192.0.2.1:5000", nil, admission.Request{}},
		{"rule by prefix", "GET", "/batch/x", "192.0.2.1:5000", nil,
			admission.Request{Priority: admission.Sheddable, Cost: 4, Deadline: now.Add(2 * time.Second)}},
		{"rule by method", "POST", "/checkout", "192.0.2.1:5000", nil, admission.Request{Priority: admission.CriticalPlus}},
		{"rule by method misses", "GET", "/checkout", "192.0.2.1:5000", nil, admission.Request{}},
		{"rule by header", "GET", "/", "192.0.2.1:5000", map[string]string{"X-Prefetch": "1"}, admission.Request{Priority: admission.SheddablePlus}},
		{"untrusted headers ignored", "GET", "/batch/x", "192.0.2.1:5000",
			map[string]string{"Sluice-Priority": "critical-plus", "Sluice-Tenant": "acme", "Sluice-Timeout": "50000"},
			admission.Request{Priority: admission.Sheddable, Cost: 4, Deadline: now.Add(2 * time.Second)}},
		{"trusted headers honoured", "GET", "/batch/x", "10.1.2.3:5000",
			map[string]string{"Sluice-Priority": "critical-plus", "Sluice-Tenant": "acme", "Sluice-Timeout": "500"},
			admission.Request{Priority: admission.CriticalPlus, Cost: 4, Tenant: "acme", Deadline: now.Add(500 * time.Millisecond)}},
		{"a trusted budget never extends the route's timeout", "GET", "/batch/x", "10.1.2.3:5000",
			map[string]string{"Sluice-Timeout": "60000"},
			admission.Request{Priority: admission.Sheddable, Cost: 4, Deadline: now.Add(2 * time.Second)}},
		{"garbage from a trusted peer is ignored", "GET", "/", "10.1.2.3:5000",
			map[string]string{"Sluice-Priority": "urgent", "Sluice-Timeout": "-5"}, admission.Request{}},
		{"a trusted zero budget does not lift the route's timeout", "GET", "/batch/x", "10.1.2.3:5000",
			map[string]string{"Sluice-Timeout": "0"},
			admission.Request{Priority: admission.Sheddable, Cost: 4, Deadline: now.Add(2 * time.Second)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, tt.path, nil)
			r.RemoteAddr = tt.peer
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			if got := c.Classify(r); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestClassifierTenantKeys(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
	long := string(make([]byte, 1000))
	tests := []struct {
		key     string
		peer    string
		headers map[string]string
		want    string
	}{
		{"header:X-Api-Key", "192.0.2.1:1", map[string]string{"X-Api-Key": "k1"}, "k1"},
		{"cookie:session", "192.0.2.1:1", map[string]string{"Cookie": "session=abc"}, "abc"},
		{"clientIP", "192.0.2.1:1", map[string]string{"X-Forwarded-For": "198.51.100.7"}, "192.0.2.1"},
		{"clientIP", "127.0.0.1:1", map[string]string{"X-Forwarded-For": "198.51.100.7, 127.0.0.2"}, "198.51.100.7"},
		{"header:X-Api-Key", "192.0.2.1:1", map[string]string{"X-Api-Key": long}, long[:128]},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			k, err := admission.ParseTenantKey(tt.key)
			if err != nil {
				t.Fatal(err)
			}
			c := &admission.Classifier{TrustedProxies: trusted, Tenant: k}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for h, v := range tt.headers {
				r.Header.Set(h, v)
			}
			if got := c.Classify(r).Tenant; got != tt.want {
				t.Fatalf("got tenant %q, want %q", got, tt.want)
			}
		})
	}
	for _, bad := range []string{"header:", "cookie", "ip", "query:x"} {
		if _, err := admission.ParseTenantKey(bad); err == nil {
			t.Errorf("ParseTenantKey(%q): got nil error, want one", bad)
		}
	}
}
