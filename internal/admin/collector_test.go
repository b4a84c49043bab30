package admin_test

import (
	"bufio"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/server"
)

// scrape registers c in a pedantic registry (which checks that Collect
// matches Describe), scrapes it in the text format and returns each
// series' value and each family's type.
//
// (prometheus/testutil would do, but its diff dependency is not in go.mod.)
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

func TestConnCollector(t *testing.T) {
	values, types := scrape(t, admin.NewConnCollector("sluice", func() server.ConnStats {
		return server.ConnStats{Open: 7, Idle: 3, Parked: 5, ProbeOnly: 1, Refused: 2, Reclaimed: 4}
	}))
	diff(t, "value of", values, map[string]string{"sluice_connections_open": "7", "sluice_connections_idle": "3", "sluice_connections_parked": "5",
		"sluice_connections_probe_only": "1", "sluice_connections_refused_total": "2", "sluice_connections_reclaimed_total": "4"})
	diff(t, "type of", types, map[string]string{"sluice_connections_open": "gauge", "sluice_connections_idle": "gauge", "sluice_connections_parked": "gauge",
		"sluice_connections_probe_only": "gauge", "sluice_connections_refused_total": "counter", "sluice_connections_reclaimed_total": "counter"})
}
