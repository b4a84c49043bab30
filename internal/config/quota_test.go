package config_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
)

func TestQuotaDefaults(t *testing.T) {
	cfg, err := config.Parse("s.yaml", []byte("tenants:\n  quota: {rate: 50}\n"))
	if err != nil {
		t.Fatal(err)
	}
	q := cfg.Tenants.Quota
	want := config.Quota{Rate: 50, Store: "local", Interval: 100 * time.Millisecond, Timeout: 250 * time.Millisecond}
	if q == nil || q.Rate != want.Rate || q.Store != want.Store || q.Interval != want.Interval || q.Timeout != want.Timeout || q.Burst != 0 {
		t.Errorf("tenants.quota = %+v; want %+v", q, want)
	}
	if cfg, _ := config.Parse("s.yaml", []byte("tenants: {key: clientIP}\n")); cfg.Tenants.Quota != nil {
		t.Error("tenants.quota set without the file naming it; want nil (no quota)")
	}
}

func TestQuotaErrors(t *testing.T) {
	src := `tenants:
  quota:
    rate: 0
    burst: -1
    store: "redis://user:hunter2@[::1"
    exempt: [critical, urgent]
    instances: -2
    interval: 0s
routes:
  - quota: {rate: 5}
`
	_, err := config.Parse("s.yaml", []byte(src))
	if err == nil {
		t.Fatal("Parse accepted a wrong quota")
	}
	for _, want := range []string{"tenants.quota.rate", "tenants.quota.burst", "tenants.quota.store", "tenants.quota.exempt[1]", "tenants.quota.instances", "tenants.quota.interval"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("errors do not name %s:\n%v", want, err)
		}
	}
	if strings.Contains(err.Error(), "hunter2") {
		t.Errorf("errors show the store's password:\n%v", err)
	}
	_, err = config.Parse("s.yaml", []byte("routes:\n  - quota: {rate: 5, burst: -3}\n"))
	if err == nil || !strings.Contains(err.Error(), "tenants.quota is not set") || !strings.Contains(err.Error(), "routes[0].quota.burst") {
		t.Errorf("a route's quota without tenants.quota, and a bad burst: %v; want both reported", err)
	}
	for _, store := range []string{"local", "redis://127.0.0.1:6379/0", "rediss://u:p@h:6380", "redis+cluster://h:7000?addr=h:7001", "redis+sentinel://h:26379?master_name=m"} {
		if _, err := config.Parse("s.yaml", []byte("tenants:\n  quota: {rate: 1, store: \""+store+"\"}\n")); err != nil {
			t.Errorf("store %s: %v; want valid", store, err)
		}
	}
}

func TestQuotaName(t *testing.T) {
	a := config.Route{Match: config.Match{PathPrefix: "/search"}}
	b := config.Route{Match: config.Match{PathPrefix: "/search", Method: "GET"}}
	c := config.Route{Match: config.Match{PathPrefix: "/sear", Header: "ch"}}
	if config.QuotaName(&a) != config.QuotaName(&config.Route{Match: a.Match, Priority: "sheddable"}) {
		t.Error("the same match named twice differently; want a name from the match alone")
	}
	names := map[string]bool{config.QuotaName(&a): true, config.QuotaName(&b): true, config.QuotaName(&c): true}
	if len(names) != 3 {
		t.Errorf("names %v; want three different ones for three matches", names)
	}
	for n := range names {
		if strings.Contains(n, ":") || n == "" {
			t.Errorf("name %q: want no ':' (the store's key separator), not empty", n)
		}
	}
}
