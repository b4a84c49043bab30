// Package promadmission exports an admission.Controller to Prometheus: its
// state, its counters and its latency histograms, read from Stats and
// Histograms once per scrape. It is the collector sluice's own /metrics
// uses; a Go service registers it in its own registry:
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(promadmission.New(ctrl, promadmission.Options{}))
//
// The admission package stays free of dependencies: it records into
// lock-free counters and fixed-bucket histograms that allocate nothing on
// the request path, and this collector turns a snapshot of them into
// constant metrics.
//
// With the default namespace "sluice" it exports:
//
//	sluice_limit                     gauge: the concurrency limit in force
//	sluice_inflight                  gauge: slots in use
//	sluice_queued                    gauge: requests waiting for a slot
//	sluice_saturation_ratio          gauge: the saturation signal in [0, 1],
//	                                 absent while the controller has none
//	sluice_latency_ewma_seconds      gauge: smoothed service time
//	sluice_admitted_total            counter: requests admitted
//	sluice_admitted_after_wait_total counter: of those, admitted after queueing
//	sluice_cancelled_total           counter: queued requests whose caller left
//	sluice_shed_total{reason}        counter: requests shed, by reason (the
//	                                 Sluice-Shed header), every reason from
//	                                 the first scrape
//	sluice_queue_wait_seconds{priority,outcome}    histogram: time spent in
//	                                 Acquire; outcome admitted, shed, cancelled
//	sluice_service_time_seconds{priority,outcome}  histogram: time a slot
//	                                 was held; outcome done, dropped
//
// A histogram series appears with its first observation, so that a service
// using one priority class exports one class's series. Their buckets are
// admission's: 50 µs doubling to 104.9 s.
package promadmission

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/admission"
)

// Source is what the collector reads; *admission.Controller is one.
type Source interface {
	Stats() admission.Stats
	Histograms() admission.Histograms
}

var _ Source = (*admission.Controller)(nil)

// Options configure a Collector. The zero value exports the names listed
// in the package documentation.
type Options struct {
	// Namespace is every metric name's prefix. Empty means "sluice".
	Namespace string
	// ConstLabels are added to every metric, to tell several controllers
	// in one registry apart (e.g. {"controller": "api"}).
	ConstLabels prometheus.Labels
}

var metricName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// Validate reports what is wrong with o, one error per wrong field.
func (o Options) Validate() error {
	var errs []error
	if o.Namespace != "" && !metricName.MatchString(o.Namespace) {
		errs = append(errs, fmt.Errorf("promadmission: Namespace %q is not a valid metric name prefix", o.Namespace))
	}
	for name := range o.ConstLabels {
		if !metricName.MatchString(name) || len(name) > 1 && name[:2] == "__" {
			errs = append(errs, fmt.Errorf("promadmission: ConstLabels: %q is not a valid label name", name))
		}
	}
	return errors.Join(errs...)
}

// Collector is a prometheus.Collector of one Source. It is safe for
// concurrent use, as a registry requires.
type Collector struct {
	src    Source
	bounds []float64 // bucket upper bounds in seconds

	limit, inflight, queued, queueCapacity, saturation, latency *prometheus.Desc
	admitted, admittedAfterWait, cancelled, shed                *prometheus.Desc
	queueWait, service                                          *prometheus.Desc
}

var _ prometheus.Collector = (*Collector)(nil)

// New returns a collector of src. It panics if o is invalid (see
// Validate), as prometheus.MustRegister does for a bad metric.
func New(src Source, o Options) *Collector {
	if err := o.Validate(); err != nil {
		panic(err)
	}
	ns := o.Namespace
	if ns == "" {
		ns = "sluice"
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(ns, "", name), help, labels, o.ConstLabels)
	}
	c := &Collector{
		src:               src,
		limit:             desc("limit", "Concurrency limit in force."),
		inflight:          desc("inflight", "Admission slots in use."),
		queued:            desc("queued", "Requests waiting for a slot."),
		queueCapacity:     desc("queue_capacity", "Requests that may wait for a slot: the queue's size in force (0: no queue)."),
		saturation:        desc("saturation_ratio", "Last value of the saturation signal, in [0, 1]."),
		latency:           desc("latency_ewma_seconds", "Smoothed (EWMA) service time of completed requests."),
		admitted:          desc("admitted_total", "Requests admitted, queued or not."),
		admittedAfterWait: desc("admitted_after_wait_total", "Requests admitted after waiting in the queue."),
		cancelled:         desc("cancelled_total", "Queued requests whose client gave up."),
		shed:              desc("shed_total", "Requests shed, by reason (the Sluice-Shed header).", "reason"),
		queueWait: desc("queue_wait_seconds",
			"Time requests spent waiting for a slot (zero when admitted or shed at once), by priority class and outcome.",
			"priority", "outcome"),
		service: desc("service_time_seconds",
			"Time requests held their slot, by priority class and outcome (dropped: failed for overload).",
			"priority", "outcome"),
	}
	c.bounds = make([]float64, admission.HistogramBuckets)
	for i := range c.bounds {
		c.bounds[i] = admission.BucketBound(i).Seconds()
	}
	return c
}

// Describe sends every metric's description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.limit, c.inflight, c.queued, c.queueCapacity, c.saturation, c.latency,
		c.admitted, c.admittedAfterWait, c.cancelled, c.shed, c.queueWait, c.service} {
		ch <- d
	}
}

// Collect takes one Stats and one Histograms snapshot and sends them.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	s := c.src.Stats()
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.limit, float64(s.Limit))
	gauge(c.inflight, float64(s.Inflight))
	gauge(c.queued, float64(s.Queued))
	gauge(c.queueCapacity, float64(s.QueueBound))
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

	hs := c.src.Histograms()
	for _, p := range admission.Priorities() {
		for _, o := range admission.WaitOutcomes() {
			c.histogram(ch, c.queueWait, hs.QueueWait(p, o), p.String(), o.String())
		}
		for _, o := range admission.ServiceOutcomes() {
			c.histogram(ch, c.service, hs.Service(p, o), p.String(), o.String())
		}
	}
}

// histogram sends h as a constant histogram, unless it is empty.
func (c *Collector) histogram(ch chan<- prometheus.Metric, d *prometheus.Desc, h admission.Histogram, labels ...string) {
	n := h.Count()
	if n == 0 {
		return
	}
	buckets := make(map[float64]uint64, len(c.bounds))
	var cum uint64
	for i, b := range c.bounds {
		cum += h.Counts[i]
		buckets[b] = cum
	}
	ch <- prometheus.MustNewConstHistogram(d, n, h.Sum.Seconds(), buckets, labels...)
}
