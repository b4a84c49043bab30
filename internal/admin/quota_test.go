package admin_test

import (
	"testing"

	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/promtest"
	"github.com/sluicehq/sluice/quota"
)

func TestQuotaCollector(t *testing.T) {
	c := admin.NewQuotaCollector("sluice", func() quota.Stats {
		return quota.Stats{Allowed: 7, Rejected: 3, StoreUp: false, StoreErrors: 2, Instances: 3, Tenants: 5}
	})
	values, types := promtest.Scrape(t, c)
	promtest.Diff(t, "value", values, map[string]string{
		`sluice_quota_requests_total{outcome="allowed"}`:  "7",
		`sluice_quota_requests_total{outcome="rejected"}`: "3",
		"sluice_quota_store_up":                           "0",
		"sluice_quota_store_errors_total":                 "2",
		"sluice_quota_instances":                          "3",
		"sluice_quota_tenants":                            "5",
	})
	promtest.Diff(t, "type", types, map[string]string{
		"sluice_quota_requests_total":     "counter",
		"sluice_quota_store_up":           "gauge",
		"sluice_quota_store_errors_total": "counter",
		"sluice_quota_instances":          "gauge",
		"sluice_quota_tenants":            "gauge",
	})
}
