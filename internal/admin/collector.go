package admin

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/server"
)

// admissionCollector exports an admission.Stats snapshot, taken once per
// scrape, so that the admission package needs no Prometheus.
type admissionCollector struct {
	snap func() admission.Stats

	limit, inflight, queued, saturation, latency *prometheus.Desc
	admitted, admittedAfterWait, cancelled, shed *prometheus.Desc
}

// NewAdmissionCollector returns a collector of the admission controller's
// state and counters, calling snap once per scrape (snap must be safe for
// concurrent use, as Controller.Stats is). With namespace "sluice" it
// exports:
//
//	gauges:   sluice_limit, sluice_inflight, sluice_queued,
//	          sluice_saturation (absent while Stats.Saturation < 0: no signal),
//	          sluice_latency_seconds (the smoothed service time)
//	counters: sluice_admitted_total, sluice_admitted_after_wait_total,
//	          sluice_cancelled_total, sluice_shed_total{reason}
//
// sluice_shed_total has a series for every admission.Reasons() from the
// first scrape, at zero until it happens, so that rate() sees the first
// shed.
func NewAdmissionCollector(namespace string, snap func() admission.Stats) prometheus.Collector {
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
	}
	return &admissionCollector{
		snap:              snap,
		limit:             desc("limit", "Current concurrency limit."),
		inflight:          desc("inflight", "Requests holding a slot."),
		queued:            desc("queued", "Requests waiting for a slot."),
		saturation:        desc("saturation", "Last value of the saturation signal, in [0, 1]."),
		latency:           desc("latency_seconds", "Smoothed (EWMA) service time of completed requests."),
		admitted:          desc("admitted_total", "Requests admitted, queued or not."),
		admittedAfterWait: desc("admitted_after_wait_total", "Requests admitted after waiting in the queue."),
		cancelled:         desc("cancelled_total", "Queued requests whose client gave up."),
		shed:              desc("shed_total", "Requests shed, by reason (the Sluice-Shed header).", "reason"),
	}
}

func (c *admissionCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.inflight, c.queued, c.saturation, c.latency,
		c.admitted, c.admittedAfterWait, c.cancelled, c.shed} {
		ch <- d
	}
}

func (c *admissionCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snap()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.limit, float64(s.Limit))
	gauge(c.inflight, float64(s.Inflight))
	gauge(c.queued, float64(s.Queued))
	if s.Saturation >= 0 {
		gauge(c.saturation, s.Saturation)
	}
	gauge(c.latency, s.Latency.Seconds())
	counter(c.admitted, s.Admitted)
	counter(c.admittedAfterWait, s.AdmittedAfterWait)
	counter(c.cancelled, s.Cancelled)

	for _, r := range admission.Reasons() {
		counter(c.shed, s.Shed[r], r.String())
	}
}

// connCollector exports a server's connection counts.
type connCollector struct {
	snap                                      func() server.ConnStats
	open, idle, probeOnly, refused, reclaimed *prometheus.Desc
}

// NewConnCollector returns a collector of a server's client connections,
// calling snap (e.g. Server.Conns) once per scrape. With namespace
// "sluice" it exports the gauges sluice_connections_open, _idle (between
// requests) and _probe_only (beyond MaxConnections, for probes), and the
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
	ch <- c.probeOnly
	ch <- c.refused
	ch <- c.reclaimed
}

func (c *connCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.snap()
	ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(s.Open))
	ch <- prometheus.MustNewConstMetric(c.idle, prometheus.GaugeValue, float64(s.Idle))
	ch <- prometheus.MustNewConstMetric(c.probeOnly, prometheus.GaugeValue, float64(s.ProbeOnly))
	ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(s.Refused))
	ch <- prometheus.MustNewConstMetric(c.reclaimed, prometheus.CounterValue, float64(s.Reclaimed))
}
