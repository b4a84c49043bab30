package promadmission_test

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/admission/promadmission"
	"github.com/sluicehq/sluice/internal/promtest"
)

// fake is a Source of fixed Stats and empty histograms.
type fake struct{ stats admission.Stats }

func (f fake) Stats() admission.Stats           { return f.stats }
func (f fake) Histograms() admission.Histograms { return admission.Histograms{} }

// shed builds shed counts from reason, count pairs.
func shed(pairs ...any) admission.ShedCounts {
	var s admission.ShedCounts
	for i := 0; i < len(pairs); i += 2 {
		s[pairs[i].(admission.Reason)] = uint64(pairs[i+1].(int))
	}
	return s
}

var (
	scrape = promtest.Scrape
	diff   = promtest.Diff
)

func TestCollector(t *testing.T) {
	stats := admission.Stats{
		Limit:             40,
		Inflight:          12,
		Queued:            3,
		QueueBound:        220,
		Saturation:        0.25,
		Latency:           1500 * time.Millisecond,
		Admitted:          1000,
		AdmittedAfterWait: 70,
		Cancelled:         4,
		Shed:              shed(admission.ReasonQueueFull, 5, admission.ReasonCoDel, 2),
	}
	values, types := scrape(t, promadmission.New(fake{stats}, promadmission.Options{}))

	wantValues := map[string]string{
		"sluice_limit":                     "40",
		"sluice_inflight":                  "12",
		"sluice_queued":                    "3",
		"sluice_queue_capacity":            "220",
		"sluice_saturation_ratio":          "0.25",
		"sluice_latency_ewma_seconds":      "1.5",
		"sluice_admitted_total":            "1000",
		"sluice_admitted_after_wait_total": "70",
		"sluice_cancelled_total":           "4",
	}
	// Every known reason has a series, at zero until it happens.
	for _, r := range admission.Reasons() {
		wantValues[`sluice_shed_total{reason="`+r.String()+`"}`] = "0"
	}
	wantValues[`sluice_shed_total{reason="queue-full"}`] = "5"
	wantValues[`sluice_shed_total{reason="codel"}`] = "2"
	diff(t, "value of", values, wantValues)

	wantTypes := map[string]string{}
	for _, g := range []string{"limit", "inflight", "queued", "queue_capacity", "saturation_ratio", "latency_ewma_seconds"} {
		wantTypes["sluice_"+g] = "gauge"
	}
	for _, c := range []string{"admitted_total", "admitted_after_wait_total", "cancelled_total", "shed_total"} {
		wantTypes["sluice_"+c] = "counter"
	}
	diff(t, "type of", types, wantTypes)
}

// A negative saturation means "no signal": the gauge is left out rather
// than exported as a value that looks like a measurement.
func TestCollectorNoSaturation(t *testing.T) {
	values, _ := scrape(t, promadmission.New(fake{admission.Stats{Saturation: -1}}, promadmission.Options{}))
	if v, ok := values["sluice_saturation_ratio"]; ok {
		t.Errorf("sluice_saturation_ratio: got %s, want no series", v)
	}
	if v := values["sluice_limit"]; v != "0" {
		t.Errorf("sluice_limit: got %q, want 0", v)
	}
}

// The snapshot is taken on every scrape, not once.
func TestCollectorLive(t *testing.T) {
	src := &fake{}
	c := promadmission.New(src, promadmission.Options{Namespace: "x"})
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for _, limit := range []int{1, 7, 3} {
		src.stats.Limit = limit
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		got := -1.0
		for _, mf := range mfs {
			if mf.GetName() == "x_limit" {
				got = mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		if got != float64(limit) {
			t.Errorf("x_limit: got %v, want %d", got, limit)
		}
	}
}
