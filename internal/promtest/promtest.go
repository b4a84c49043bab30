// Package promtest scrapes a Prometheus collector in tests: the one helper
// the collectors of admission/promadmission and internal/admin share.
// (prometheus/testutil would do, but its diff dependency is not in go.mod.)
package promtest

import (
	"bufio"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Scrape registers c in a pedantic registry (which checks that Collect
// matches Describe), scrapes it in the text format and returns each
// series' value and each family's type.
func Scrape(t testing.TB, c prometheus.Collector) (values, types map[string]string) {
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

// Diff reports, as what, every key whose value in got differs from want's,
// and every key of got that want does not have.
func Diff(t testing.TB, what string, got, want map[string]string) {
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
