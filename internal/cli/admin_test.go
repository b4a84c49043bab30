package cli

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/demo"
)

// scrapeMetrics returns each sample line's value by series, from the admin
// listener's /metrics in the text format.
func scrapeMetrics(t *testing.T, adminAddr string) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + adminAddr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	values := map[string]string{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if i := strings.LastIndexByte(line, ' '); i > 0 && line[0] != '#' {
			values[line[:i]] = line[i+1:]
		}
	}
	return values
}

// family is the metric family a series belongs to: its name without
// labels and without a histogram's _bucket, _sum or _count.
func family(series string) string {
	name, _, _ := strings.Cut(series, "{")
	for _, suf := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suf); ok && (base == "sluice_queue_wait_seconds" || base == "sluice_service_time_seconds") {
			return base
		}
	}
	return name
}

// A running front with workers (and a tenants' quota) exports every family
// of admin.MetricNames that its mode has, and nothing unlisted; the histograms, the response
// counts and the per-worker gauges carry the requests just served; /stats
// carries the histograms and worker limits the dashboard draws.
func TestServeMetrics(t *testing.T) {
	addr, adminAddr := freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: %q}
workers:
  command: [%q, demo-worker]
  count: 2
  concurrency: 1
  readyPath: %s
  env: {%s: "1"}
tenants: {quota: {rate: 1000}}
`, addr, adminAddr, os.Args[0], demo.ReadyPath, runMainEnv))
	startSluice(t, "serve", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	waitStats(t, adminAddr, func(s stats) bool {
		ready := 0
		for _, w := range s.Workers {
			if w.State == "ready" {
				ready++
			}
		}
		return ready == 2
	})
	const n = 5
	for range n {
		if code, _, body := get("http://"+addr+"/?cpu=1", 5*time.Second); code != http.StatusOK {
			t.Fatalf("got %d %q, want 200", code, body)
		}
	}
	values := scrapeMetrics(t, adminAddr)
	families := map[string]bool{}
	for series := range values {
		if strings.HasPrefix(series, "sluice_") {
			families[family(series)] = true
		}
	}
	// Absent in this mode or state: no saturation signal in front mode,
	// no crash loop, no upstreams. A worker's saturation appears once it
	// reports one.
	absent := []string{"sluice_saturation_ratio",
		"sluice_supervisor_crash_loop_resume_timestamp_seconds", "sluice_upstream_up"}
	for _, name := range admin.MetricNames {
		if name == "sluice_worker_saturation_ratio" {
			continue
		}
		if families[name] == slices.Contains(absent, name) {
			t.Errorf("%s: exported %v, want %v", name, families[name], !families[name])
		}
	}
	for name := range families {
		if !slices.Contains(admin.MetricNames, name) {
			t.Errorf("%s is exported but not in admin.MetricNames", name)
		}
	}
	for series, want := range map[string]string{
		`sluice_requests_total{code="200"}`:                                       fmt.Sprint(n),
		`sluice_service_time_seconds_count{outcome="done",priority="critical"}`:   fmt.Sprint(n),
		`sluice_queue_wait_seconds_count{outcome="admitted",priority="critical"}`: fmt.Sprint(n),
		`sluice_worker_limit{worker="0"}`:                                         "1",
		`sluice_worker_limit{worker="1"}`:                                         "1",
		`sluice_workers{state="ready"}`:                                           "2",
		`sluice_supervisor_crash_looping`:                                         "0",
	} {
		if values[series] != want {
			t.Errorf("%s: got %q, want %q", series, values[series], want)
		}
	}
	if !slices.ContainsFunc(slices.Collect(func(yield func(string) bool) {
		for k := range values {
			if !yield(k) {
				return
			}
		}
	}), func(k string) bool {
		return strings.HasPrefix(k, "sluice_build_info{") && strings.Contains(k, `goversion="go`)
	}) {
		t.Error("no sluice_build_info with a goversion")
	}

	st := waitStats(t, adminAddr, func(s stats) bool { return s.Latency != nil })
	var served uint64
	for _, c := range st.Latency.Service {
		served += c
	}
	if served != n || len(st.Latency.Bounds)+1 != len(st.Latency.Service) {
		t.Errorf("/stats latency: got %d served over %d buckets and %d bounds, want %d and one more bucket than bounds",
			served, len(st.Latency.Service), len(st.Latency.Bounds), n)
	}
	for _, w := range st.Workers {
		if w.Limit != 1 || w.MaxConcurrency != 1 || w.State != "ready" {
			t.Errorf("/stats worker %s: got limit %d of %d, %s; want 1 of 1, ready", w.ID, w.Limit, w.MaxConcurrency, w.State)
		}
	}
}
