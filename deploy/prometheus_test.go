package deploy

import (
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

var (
	scrapeOnce sync.Once
	scraped    map[string]map[string]map[string]bool
)

// exportedMetrics is what a running sluice's admin /metrics exports: for
// each metric name, each label's values. It is scraped once per test
// binary from a real `sluice serve` fronting one worker, the way the
// manifests run it, with a tenants' quota (on its local store) so that
// the quota's families are there too.
func exportedMetrics(t *testing.T) map[string]map[string]map[string]bool {
	t.Helper()
	scrapeOnce.Do(func() {
		r := start(t, `
server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}, pprof: false}
workers: {command: [{{worker}}], count: 1, concurrency: 1, readyPath: /healthz, stopTimeout: 1s}
tenants: {quota: {rate: 1000}}
`)
		// One request through a worker, so that the series that appear
		// with their first observation (by status, the histograms) do.
		if code, body := get("http://" + r.addr + "/"); code == 0 {
			t.Fatalf("a request through sluice: %s", body)
		}
		code, body := get("http://" + r.admin + "/metrics")
		if code != http.StatusOK {
			t.Fatalf("admin /metrics: got %d %q", code, body)
		}
		scraped = scrape(body)
		r.Cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.Done():
		case <-time.After(bound):
			t.Fatal("sluice did not exit after SIGTERM")
		}
	})
	if scraped == nil {
		t.Fatal("scraping a running sluice failed in an earlier test")
	}
	return scraped
}

// selector is a metric named in a PromQL expression, with its label
// matchers of the forms label="value" and label!="value".
type selector struct {
	metric string
	labels map[string]string
}

var (
	promString   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	promTemplate = regexp.MustCompile(`<<[^>]*>>`)
	promBraces   = regexp.MustCompile(`\{[^}]*\}`)
	promRange    = regexp.MustCompile(`\[[^\]]*\]`)
	promGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(!=|=~|!~|=)\s*"((?:[^"\\]|\\.)*)"`)
	promToken    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*|[0-9][0-9a-zA-Z.]*`)
	promKeywords = map[string]bool{
		"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"inf": true, "nan": true, "atan2": true,
	}
)

// metricSelectors returns the metrics an expression reads, with their
// exact-value label matchers. It is a tokenizer, not a PromQL parser: a
// name followed by "(" is a function or an aggregation, and the label
// lists of by, without, on and ignoring are not names. promtool checks
// the syntax (see TestPromtool).
func metricSelectors(expr string) []selector {
	expr = promTemplate.ReplaceAllString(expr, "")
	// Matchers first, keyed by position, before the strings go.
	var sels []selector
	rest := promRange.ReplaceAllString(expr, "")
	rest = promGrouping.ReplaceAllString(rest, "")
	withMatchers := map[int]map[string]string{}
	for _, loc := range promBraces.FindAllStringIndex(rest, -1) {
		m := map[string]string{}
		for _, mm := range promMatcher.FindAllStringSubmatch(rest[loc[0]:loc[1]], -1) {
			if mm[2] == "=" || mm[2] == "!=" {
				m[mm[1]] = mm[3]
			}
		}
		withMatchers[loc[0]] = m
	}
	// Blank out braces and strings, keeping positions.
	blank := func(re *regexp.Regexp, s string) string {
		return re.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat(" ", len(m)) })
	}
	bare := blank(promBraces, blank(promString, rest))
	for _, loc := range promToken.FindAllStringIndex(bare, -1) {
		tok := bare[loc[0]:loc[1]]
		if tok[0] >= '0' && tok[0] <= '9' || promKeywords[tok] {
			continue
		}
		after := strings.TrimLeft(rest[loc[1]:], " \t\n")
		if strings.HasPrefix(after, "(") {
			continue // a function or an aggregation
		}
		sel := selector{metric: tok}
		if strings.HasPrefix(after, "{") {
			sel.labels = withMatchers[len(rest)-len(after)]
		}
		sels = append(sels, sel)
	}
	return sels
}

func TestMetricSelectors(t *testing.T) {
	tests := []struct {
		expr string
		want []string // metric, or metric{label=value}
	}{
		{`sluice_queued > 0`, []string{"sluice_queued"}},
		{`sum by (job, instance) (rate(sluice_shed_total{reason!="shutdown"}[5m])) / 2e3`,
			[]string{`sluice_shed_total{reason=shutdown}`}},
		{`changes(process_start_time_seconds[15m]) > 2 and on (job, instance) present_over_time(sluice_limit[15m])`,
			[]string{"process_start_time_seconds", "sluice_limit"}},
		{`sum by (<<.GroupBy>>) (avg_over_time(sluice_inflight{<<.LabelMatchers>>}[1m])) / sum(sluice_limit offset 5m)`,
			[]string{"sluice_inflight", "sluice_limit"}},
		{`label_replace(up, "a", "$1", "b", "(.*)") or vector(1)`, []string{"up"}},
	}
	for _, tt := range tests {
		var got []string
		for _, s := range metricSelectors(tt.expr) {
			name := s.metric
			for k, v := range s.labels {
				name += "{" + k + "=" + v + "}"
			}
			got = append(got, name)
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("%s: got %q, want %q", tt.expr, got, tt.want)
		}
	}
}

// checkSelectors fails the test for every metric expr names that a running
// sluice does not export, and every value of a label of sluice's own that
// it matches and no series has.
func checkSelectors(t *testing.T, where, expr string, exp map[string]map[string]map[string]bool) {
	t.Helper()
	sels := metricSelectors(expr)
	if len(sels) == 0 {
		t.Errorf("%s: names no metric: %s", where, expr)
	}
	for _, s := range sels {
		labels, ok := exp[s.metric]
		if !ok {
			t.Errorf("%s: %s is not exported by sluice's /metrics", where, s.metric)
			continue
		}
		for k, v := range s.labels {
			if _, own := labels[k]; !own {
				continue // a target label (job, instance, pod): Prometheus's, not sluice's
			}
			if !labels[k][v] {
				t.Errorf("%s: %s{%s=%q}: sluice exports no such series (%s values: %v)",
					where, s.metric, k, v, k, keys(labels[k]))
			}
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func TestAlertRules(t *testing.T) {
	var rf ruleFile
	readYAML(t, "prometheus/alerts.yaml", &rf)
	exp := exportedMetrics(t)
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			if r.Alert == "" || r.Expr == "" {
				t.Errorf("group %s: a rule without alert or expr", g.Name)
				continue
			}
			if r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: want a severity label and a summary", r.Alert)
			}
			checkSelectors(t, r.Alert, r.Expr, exp)
		}
	}
	for _, want := range []string{"SluiceSaturated", "SluiceShedding", "SluiceCrashLooping", "SluiceWorkersCrashLooping"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("no alert %s", want)
		}
	}
}

type adapterRules struct {
	Rules []struct {
		SeriesQuery string `yaml:"seriesQuery"`
		Name        struct {
			As string `yaml:"as"`
		} `yaml:"name"`
		MetricsQuery string `yaml:"metricsQuery"`
	} `yaml:"rules"`
}

// TestHPAMetrics: every metric the HPA scales on is served by an adapter
// rule, and every rule reads metrics sluice exports.
func TestHPAMetrics(t *testing.T) {
	var ar adapterRules
	readYAML(t, "prometheus/adapter-rules.yaml", &ar)
	exp := exportedMetrics(t)
	served := map[string]bool{}
	for _, r := range ar.Rules {
		served[r.Name.As] = true
		checkSelectors(t, "adapter rule "+r.Name.As+" seriesQuery", r.SeriesQuery, exp)
		checkSelectors(t, "adapter rule "+r.Name.As+" metricsQuery", r.MetricsQuery, exp)
	}
	var hpa struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		Metrics     []struct {
			Type string `yaml:"type"`
			Pods *struct {
				Metric struct {
					Name string `yaml:"name"`
				} `yaml:"metric"`
			} `yaml:"pods"`
		} `yaml:"metrics"`
	}
	objs := manifests(t)
	only(t, objs, "HorizontalPodAutoscaler", &hpa)
	dep := only(t, objs, "Deployment", nil)
	if hpa.ScaleTargetRef.Kind != "Deployment" || hpa.ScaleTargetRef.Name != dep.Metadata.Name {
		t.Errorf("HPA scales %s %s, want Deployment %s", hpa.ScaleTargetRef.Kind, hpa.ScaleTargetRef.Name, dep.Metadata.Name)
	}
	if hpa.MinReplicas < 2 {
		t.Errorf("HPA minReplicas %d: with the PodDisruptionBudget's maxUnavailable 1, want at least 2", hpa.MinReplicas)
	}
	if len(hpa.Metrics) == 0 {
		t.Fatal("HPA: no metrics")
	}
	for _, m := range hpa.Metrics {
		if m.Pods == nil {
			t.Errorf("HPA metric of type %s: want sluice's pod metrics only", m.Type)
			continue
		}
		if !served[m.Pods.Metric.Name] {
			t.Errorf("HPA metric %s: no adapter rule serves it (adapter-rules.yaml serves %v)", m.Pods.Metric.Name, keys(served))
		}
	}
}

// TestPromtool checks the rules' PromQL with promtool and runs their unit
// tests (prometheus/alerts_test.yaml: each alert fires in its situation
// and not in the one beside it), where promtool is installed (Debian's
// prometheus package has it).
func TestPromtool(t *testing.T) {
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed")
	}
	for _, args := range [][]string{
		{"check", "rules", "alerts.yaml"},
		{"test", "rules", "alerts_test.yaml"},
	} {
		cmd := exec.Command(path, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}
