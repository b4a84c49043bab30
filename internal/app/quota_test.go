package app

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
)

// TestQuotaServed: library mode with tenants.quota and a route's own. A
// tenant past its credit gets 429 quota with Retry-After; the route counts
// apart; the exempt priority is never refused; /stats and /metrics show
// the quota; Run stops the leases and returns.
func TestQuotaServed(t *testing.T) {
	adm := testutil.FreeAddr(t)
	cfg := parse(t, `server: {drainDelay: 0s}
admin: {listen: "`+adm+`"}
tenants:
  key: header:X-Tenant
  quota: {rate: 1, burst: 4, exempt: [critical-plus], instances: 1}
routes:
  - match: {pathPrefix: /search}
    quota: {rate: 1, burst: 4}
  - match: {pathPrefix: /health}
    priority: critical-plus
`)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Config: cfg, Library: testLibrary, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	get := func(path string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+ln.Addr().String()+path, nil)
		req.Header.Set("X-Tenant", "acme")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// Rate 1, burst 4, one instance: a credit of one request before the
	// first lease, per tenant and limit.
	if resp := get("/"); resp.StatusCode != http.StatusOK {
		t.Fatalf("first request: %d; want 200", resp.StatusCode)
	}
	resp := get("/")
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Sluice-Shed") != "quota" || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second request: %d, Sluice-Shed %q, Retry-After %q; want 429 quota with a Retry-After", resp.StatusCode, resp.Header.Get("Sluice-Shed"), resp.Header.Get("Retry-After"))
	}
	if resp := get("/search"); resp.StatusCode != http.StatusOK {
		t.Errorf("the route's first request: %d; want 200 (its quota counts apart)", resp.StatusCode)
	}
	for range 5 {
		if resp := get("/health"); resp.StatusCode != http.StatusOK {
			t.Errorf("exempt request: %d; want 200", resp.StatusCode)
		}
	}
	_, body := testutil.Get(ctx, "http://"+adm+"/stats")
	var st struct {
		Quota *struct {
			StoreUp bool `json:"storeUp"`
			Tenants int  `json:"tenants"`
		} `json:"quota"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Quota == nil || !st.Quota.StoreUp || st.Quota.Tenants != 2 {
		t.Errorf("/stats quota = %+v (%v); want the store up, 2 buckets (the tenant, under two limits)", st.Quota, err)
	}
	if _, metrics := testutil.Get(ctx, "http://"+adm+"/metrics"); !strings.Contains(metrics, "sluice_quota_store_up 1") || !strings.Contains(metrics, `sluice_shed_total{reason="quota"} 1`) {
		t.Errorf("/metrics lacks the quota's store and its shed:\n%s", metrics)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v; want nil", err)
	}
}
