package admin

// The admission controller's collector is admission/promadmission's, so
// that a library user exports the same names; the collectors here are of
// what only the binary has.

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/server"
)

// connCollector exports a server's connection counts.
type connCollector struct {
	snap                                              func() server.ConnStats
	open, idle, parked, probeOnly, refused, reclaimed *prometheus.Desc
}

// NewConnCollector returns a collector of a server's client connections,
// calling snap (e.g. Server.Conns) once per scrape. With namespace
// "sluice" it exports the gauges sluice_connections_open, _idle (between
// requests), _parked (idle and waiting outside net/http) and _probe_only (beyond MaxConnections, for probes), and the
// counters sluice_connections_refused_total (closed at accept: the limit
// and the probe reserve reached) and sluice_connections_reclaimed_total
// (idle connections closed to make room at the limit).
func NewConnCollector(namespace string, snap func() server.ConnStats) prometheus.Collector {
	return &connCollector{
		snap: snap,
		open: prometheus.NewDesc(prometheus.BuildFQName(namespace, "connections", "open"),
			"Client connections open.", nil, nil),
		idle: prometheus.NewDesc(prometheus.BuildFQName(namespace, "connections", "idle"),
			"Client connections open and idle between requests.", nil, nil),
		parked: prometheus.NewDesc(prometheus.BuildFQName(namespace, "connections", "parked"),
			"Client connections open and waiting for their client outside net/http (a few KiB each).", nil, nil),
		probeOnly: prometheus.NewDesc(prometheus.BuildFQName(namespace, "connections", "probe_only"),
			"Client connections accepted beyond the connection limit, for the probes only.", nil, nil),
		refused: prometheus.NewDesc(prometheus.BuildFQName(namespace, "connections", "refused_total"),
			"Client connections closed at accept because the connection limit was reached.", nil, nil),
		reclaimed: prometheus.NewDesc(prometheus.BuildFQName(namespace, "connections", "reclaimed_total"),
			"Idle client connections closed to make room for a new one at the connection limit.", nil, nil),
	}
}

func (c *connCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.open
	ch <- c.idle
	ch <- c.parked
	ch <- c.probeOnly
	ch <- c.refused
	ch <- c.reclaimed
}

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snap()
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.Open))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(c.parked, prometheus.GaugeValue, float64(s.Parked))
	ch <- prometheus.MustNewConstMetric(c.probeOnly, prometheus.GaugeValue, float64(s.ProbeOnly))
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(s.Refused))
	ch <- prometheus.MustNewConstMetric(c.reclaimed, prometheus.CounterValue, float64(s.Reclaimed))
}
