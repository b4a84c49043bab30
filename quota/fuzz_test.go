package quota_test

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/quota"
)

// FuzzTenantKey follows a client's tenant key from its header to its
// bucket: whatever the bytes, the key is bounded, the tenant gets its own
// credit and no more, and another tenant's is untouched. The seeds run in
// every `go test`.
func FuzzTenantKey(f *testing.F) {
	for _, s := range []string{"", "a", "a:b", ":", "routes[0]:x", "{tag}", "\x00\xff\xfe", strings.Repeat("k", 500), "é漢字", "a\tb"} {
		f.Add(s, "other")
	}
	cls := &admission.Classifier{Tenant: admission.TenantKey{Kind: admission.TenantHeader, Name: "X-Tenant"}}
	f.Fuzz(func(t *testing.T, key, other string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header["X-Tenant"] = []string{key}
		req := cls.Classify(r)
		if len(req.Tenant) > 128 {
			t.Fatalf("tenant key of %d bytes; want at most 128", len(req.Tenant))
		}
		// Rate 1, burst 4, one instance: a credit of one request.
		l, err := quota.New(quota.Options{Store: quota.NewMemoryStore(), Limit: quota.Limit{Rate: 1, Burst: 4}, Instances: 1, MaxTracked: 64})
		if err != nil {
			t.Fatal(err)
		}
		if ok, _ := l.Take(req); !ok {
			t.Fatalf("tenant %q: first request refused", req.Tenant)
		}
		if ok, retry := l.Take(req); ok || retry <= 0 {
			t.Fatalf("tenant %q: second request = %v, %v; want refused with a retry", req.Tenant, ok, retry)
		}
		o := admission.Request{Tenant: other}
		if other == req.Tenant {
			return
		}
		if ok, _ := l.Take(o); !ok {
			t.Fatalf("tenant %q refused after tenant %q spent its credit", other, req.Tenant)
		}
		if n := l.Stats().Tenants; n != 2 {
			t.Fatalf("%d tenants tracked; want 2", n)
		}
	})
}
