package admin_test

import (
	"bufio"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/server"
)

// scrape registers c in a pedantic registry (which checks that Collect
// matches Describe), scrapes it in the text format and returns each
// series' value and each family's type.
//
// (prometheus/testutil would do, but its diff dependency is not in go.sum.)
func scrape(t *testing.T, c prometheus.Collector) (values, types map[string]string) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.HTTPErrorOnError}).
		ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("scrape: got %d: %s", rec.Code, rec.Body)
	}
	values, types = map[string]string{}, map[string]string{}
	sc := bufio.NewScanner(rec.Body)
	for sc.Scan() {
		line := sc.Text()
		if f := strings.Fields(line); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			types[f[2]] = f[3]
		} else if i := strings.LastIndexByte(line, ' '); i > 0 && line[0] != '#' {
			values[line[:i]] = line[i+1:]
		}
	}
	return values, types
}

func diff(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if got[k] != want[k] {
			t.Errorf("%s %s: got %q, want %q", what, k, got[k], want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("%s %s: got %q, want none", what, k, got[k])
		}
	}
}

func TestAdmissionCollector(t *testing.T) {
	stats := admission.Stats{
		Limit:             40,
		Inflight:          12,
		Queued:            3,
		Saturation:        0.25,
		Latency:           1500 * time.Millisecond,
		Admitted:          1000,
		AdmittedAfterWait: 70,
		Cancelled:         4,
		Shed:              shed(admission.ReasonQueueFull, 5, admission.ReasonCoDel, 2),
	}
	values, types := scrape(t, admin.NewAdmissionCollector("sluice", func() admission.Stats { return stats }))

	wantValues := map[string]string{
		"sluice_limit":                     "40",
		"sluice_inflight":                  "12",
		"sluice_queued":                    "3",
		"sluice_saturation":                "0.25",
		"sluice_latency_seconds":           "1.5",
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
	for _, g := range []string{"limit", "inflight", "queued", "saturation", "latency_seconds"} {
		wantTypes["sluice_"+g] = "gauge"
	}
	for _, c := range []string{"admitted_total", "admitted_after_wait_total", "cancelled_total", "shed_total"} {
		wantTypes["sluice_"+c] = "counter"
	}
	diff(t, "type of", types, wantTypes)
}

// A negative saturation means "no signal": the gauge is left out rather
// than exported as a value that looks like a measurement.
func TestAdmissionCollectorNoSaturation(t *testing.T) {
	values, _ := scrape(t, admin.NewAdmissionCollector("sluice", func() admission.Stats { return admission.Stats{Saturation: -1} }))
	if v, ok := values["sluice_saturation"]; ok {
		t.Errorf("sluice_saturation: got %s, want no series", v)
	}
	if v := values["sluice_limit"]; v != "0" {
		t.Errorf("sluice_limit: got %q, want 0", v)
	}
}

// The snapshot is taken on every scrape, not once.
func TestAdmissionCollectorLive(t *testing.T) {
	var s admission.Stats
	c := admin.NewAdmissionCollector("x", func() admission.Stats { return s })
	reg := prometheus.NewRegistry()
	reg.MustRegister(c)
	for _, limit := range []int{1, 7, 3} {
		s.Limit = limit
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

func TestConnCollector(t *testing.T) {
	values, types := scrape(t, admin.NewConnCollector("sluice", func() server.ConnStats {
		return server.ConnStats{Open: 7, Idle: 3, ProbeOnly: 1, Refused: 2, Reclaimed: 4}
	}))
	diff(t, "value of", values, map[string]string{"sluice_connections_open": "7", "sluice_connections_idle": "3",
		"sluice_connections_probe_only": "1", "sluice_connections_refused_total": "2", "sluice_connections_reclaimed_total": "4"})
	diff(t, "type of", types, map[string]string{"sluice_connections_open": "gauge", "sluice_connections_idle": "gauge",
		"sluice_connections_probe_only": "gauge", "sluice_connections_refused_total": "counter", "sluice_connections_reclaimed_total": "counter"})
}
