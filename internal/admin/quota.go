package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/quota"
)

// quotaCollector exports a quota.Limiter's counters.
type quotaCollector struct {
	snap                                               func() quota.Stats
	requests, storeUp, storeErrors, instances, tenants *prometheus.Desc
}

// QuotaOutcomes are the values of sluice_quota_requests_total's outcome
// label.
var QuotaOutcomes = []string{"allowed", "rejected"}

// NewQuotaCollector returns a collector of the tenants' quota, calling
// snap (quota.Limiter.Stats) once per scrape. With namespace "sluice" it
// exports sluice_quota_requests_total{outcome="allowed"|"rejected"} (exempt
// requests are not counted), sluice_quota_store_up (0 while the store's
// calls fail and each instance allows its share), sluice_quota_store_errors_total,
// sluice_quota_instances (those the rate is shared by when the store
// fails) and sluice_quota_tenants (tracked at once).
func NewQuotaCollector(namespace string, snap func() quota.Stats) prometheus.Collector {
	return &quotaCollector{
		snap: snap,
		requests: prometheus.NewDesc(prometheus.BuildFQName(namespace, "quota", "requests_total"),
			"Requests checked against their tenant's quota, by outcome (rejected: 429, Sluice-Shed: quota).", []string{"outcome"}, nil),
		storeUp: prometheus.NewDesc(prometheus.BuildFQName(namespace, "quota", "store_up"),
			"1 while the quota's store answers; 0 while each instance allows its share of each tenant's rate.", nil, nil),
		storeErrors: prometheus.NewDesc(prometheus.BuildFQName(namespace, "quota", "store_errors_total"),
			"Calls to the quota's store that failed or timed out.", nil, nil),
		instances: prometheus.NewDesc(prometheus.BuildFQName(namespace, "quota", "instances"),
			"Instances sharing the quota's store, from their heartbeats (or configured).", nil, nil),
		tenants: prometheus.NewDesc(prometheus.BuildFQName(namespace, "quota", "tenants"),
			"Tenants whose quota this instance tracks.", nil, nil),
	}
}

func (c *quotaCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.requests
	ch <- c.storeUp
	ch <- c.storeErrors
	ch <- c.instances
	ch <- c.tenants
}

func (c *quotaCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snap()
	up := 0.0
	if s.StoreUp {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(s.Allowed), QuotaOutcomes[0])
	ch <- prometheus.MustNewConstMetric(c.requests, prometheus.CounterValue, float64(s.Rejected), QuotaOutcomes[1])
	ch <- prometheus.MustNewConstMetric(c.storeUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.storeErrors, prometheus.CounterValue, float64(s.StoreErrors))
	ch <- prometheus.MustNewConstMetric(c.instances, prometheus.GaugeValue, float64(s.Instances))
	ch <- prometheus.MustNewConstMetric(c.tenants, prometheus.GaugeValue, float64(s.Tenants))
}
