package promadmission_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/admission/promadmission"
	"github.com/sluicehq/sluice/limit"
)

func newController(t *testing.T, lim int) *admission.Controller {
	t.Helper()
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(lim), SampleWindow: -1, QueueSize: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// gather registers a collector of c in a fresh registry and gathers it.
// (The client_model types are not named, so that this module need not
// require that package directly.)
func gather(t *testing.T, c *admission.Controller, o promadmission.Options) map[string]family {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(promadmission.New(c, o))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]family{}
	for _, mf := range mfs {
		f := family{typ: mf.GetType().String()}
		for _, m := range mf.GetMetric() {
			s := series{labels: map[string]string{}, value: m.GetGauge().GetValue() + m.GetCounter().GetValue()}
			for _, lp := range m.GetLabel() {
				s.labels[lp.GetName()] = lp.GetValue()
			}
			if h := m.GetHistogram(); h != nil {
				s.count, s.sum = h.GetSampleCount(), h.GetSampleSum()
				for _, b := range h.GetBucket() {
					s.buckets = append(s.buckets, bucket{b.GetUpperBound(), b.GetCumulativeCount()})
				}
			}
			f.series = append(f.series, s)
		}
		byName[mf.GetName()] = f
	}
	return byName
}

type family struct {
	typ    string
	series []series
}

type series struct {
	labels     map[string]string
	value, sum float64
	count      uint64
	buckets    []bucket
}

type bucket struct {
	le  float64
	cum uint64
}

func TestCollectorExportsStatsAndHistograms(t *testing.T) {
	c := newController(t, 1)
	ctx := context.Background()
	p, err := c.Acquire(ctx, admission.Request{Priority: admission.Sheddable})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Acquire(ctx, admission.Request{}); err == nil {
		t.Fatal("got a second slot under limit 1 with no queue, want a shed")
	}
	p.DoneSample(limit.Sample{Now: time.Now(), RTT: 3 * time.Millisecond})

	mfs := gather(t, c, promadmission.Options{})
	want := map[string]string{
		"sluice_limit": "GAUGE", "sluice_inflight": "GAUGE",
		"sluice_queued": "GAUGE", "sluice_queue_capacity": "GAUGE", "sluice_latency_ewma_seconds": "GAUGE",
		"sluice_admitted_total": "COUNTER", "sluice_admitted_after_wait_total": "COUNTER",
		"sluice_cancelled_total": "COUNTER", "sluice_shed_total": "COUNTER",
		"sluice_queue_wait_seconds": "HISTOGRAM", "sluice_service_time_seconds": "HISTOGRAM",
	}
	for name, typ := range want {
		mf, ok := mfs[name]
		if !ok {
			t.Errorf("got no %s", name)
			continue
		}
		if mf.typ != typ {
			t.Errorf("%s: got type %v, want %v", name, mf.typ, typ)
		}
	}
	if _, ok := mfs["sluice_saturation_ratio"]; ok {
		t.Errorf("got sluice_saturation_ratio from a controller with no signal, want it absent")
	}
	if got := len(mfs["sluice_shed_total"].series); got != len(admission.Reasons()) {
		t.Errorf("sluice_shed_total: got %d series, want one per reason (%d)", got, len(admission.Reasons()))
	}

	// One series per observed (priority, outcome): the sheddable
	// admission, the critical shed; one service time.
	waits := map[string]uint64{}
	for _, s := range mfs["sluice_queue_wait_seconds"].series {
		waits[s.labels["priority"]+"/"+s.labels["outcome"]] = s.count
	}
	if len(waits) != 2 || waits["sheddable/admitted"] != 1 || waits["critical/shed"] != 1 {
		t.Errorf("sluice_queue_wait_seconds: got %v, want sheddable/admitted 1 and critical/shed 1", waits)
	}
	svc := mfs["sluice_service_time_seconds"].series
	if len(svc) != 1 {
		t.Fatalf("sluice_service_time_seconds: got %d series, want 1", len(svc))
	}
	h := svc[0]
	if h.labels["priority"] != "sheddable" || h.labels["outcome"] != "done" {
		t.Errorf("service series: got labels %v, want sheddable/done", h.labels)
	}
	if h.count != 1 || h.sum != 0.003 {
		t.Errorf("service: got count %d sum %v, want 1 and 0.003", h.count, h.sum)
	}
	// Cumulative buckets: nothing up to 1.6 ms, the one sample from 3.2 ms.
	for _, b := range h.buckets {
		wantN := uint64(0)
		if b.le >= 0.0032 {
			wantN = 1
		}
		if b.cum != wantN {
			t.Errorf("service bucket le=%v: got %d, want %d", b.le, b.cum, wantN)
		}
	}
	if n := len(h.buckets); n != admission.HistogramBuckets {
		t.Errorf("got %d buckets, want %d", n, admission.HistogramBuckets)
	}
}

// The names follow Prometheus's conventions (promlint: units, _total on
// counters, no reserved suffixes on gauges).
func TestCollectorLint(t *testing.T) {
	c := newController(t, 4)
	p, _ := c.Acquire(context.Background(), admission.Request{})
	p.Done()
	reg := prometheus.NewRegistry()
	reg.MustRegister(promadmission.New(c, promadmission.Options{}))
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	problems, err := promlint.NewWithMetricFamilies(mfs).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestOptions(t *testing.T) {
	c := newController(t, 4)
	mfs := gather(t, c, promadmission.Options{Namespace: "api", ConstLabels: prometheus.Labels{"controller": "search"}})
	mf, ok := mfs["api_limit"]
	if !ok {
		t.Fatalf("got %d families without api_limit", len(mfs))
	}
	if l := mf.series[0].labels; l["controller"] != "search" {
		t.Errorf("got labels %v, want controller=search", l)
	}

	err := promadmission.Options{Namespace: "bad-name", ConstLabels: prometheus.Labels{"__x": "y"}}.Validate()
	if err == nil || !strings.Contains(err.Error(), "Namespace") || !strings.Contains(err.Error(), "ConstLabels") {
		t.Errorf("got %v, want errors naming Namespace and ConstLabels", err)
	}
	if err := (promadmission.Options{}).Validate(); err != nil {
		t.Errorf("zero Options: got %v, want nil", err)
	}
}
