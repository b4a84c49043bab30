package admin_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/server"
)

func serve(t *testing.T, h http.Handler, method, path string, header ...string) (*http.Response, string) {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	resp := rec.Result()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

func TestEndpoints(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: "test_things_total", Help: "Things."})
	c.Add(3)
	reg.MustRegister(c)
	snap := admin.Snapshot{
		Time:      time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC),
		Admission: admission.Stats{Limit: 40, Inflight: 12, Queued: 3, Saturation: 0.5, Latency: 20 * time.Millisecond, Shed: shed(admission.ReasonQueueFull, 2)},
		Conns:     &server.ConnStats{Open: 7, Refused: 1},
		Workers:   []admin.Worker{{ID: "worker-1", State: "ready", PID: 42, Inflight: 1}},
	}
	h := admin.Handler(admin.Options{Registry: reg, Stats: func() any { return snap }, Pprof: true, Title: "web-1 <prod>"})

	tests := []struct {
		method, path string
		wantStatus   int
		wantType     string // prefix
		wantBody     []string
	}{
		{"GET", "/", 200, "text/html; charset=utf-8", []string{"<canvas", "./stats", "web-1 &lt;prod&gt;", "./debug/pprof/"}},
		{"HEAD", "/", 200, "text/html; charset=utf-8", nil},
		{"GET", "/stats", 200, "application/json", []string{`"limit":40`, `"inflight":12`, `"open":7`, `"worker-1"`}},
		{"GET", "/metrics", 200, "text/plain", []string{"test_things_total 3"}},
		{"GET", "/debug/pprof/", 200, "text/html", []string{"goroutine"}},
		{"GET", "/debug/pprof/goroutine?debug=1", 200, "text/plain", []string{"goroutine profile:"}},
		{"GET", "/debug/pprof/cmdline", 200, "text/plain", nil},
		{"GET", "/nope", 404, "text/plain", nil},
		{"POST", "/stats", 405, "text/plain", nil},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := serve(t, h, tc.method, tc.path)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("got %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, tc.wantType) {
				t.Errorf("Content-Type: got %q, want %q...", got, tc.wantType)
			}
			for _, want := range tc.wantBody {
				if !strings.Contains(body, want) {
					t.Errorf("body: %q is missing from %.300q", want, body)
				}
			}
		})
	}
}

func TestStatsJSON(t *testing.T) {
	snap := admin.Snapshot{
		Admission: admission.Stats{Limit: 40, Saturation: -1, Latency: 1500 * time.Microsecond, Shed: shed(admission.ReasonCoDel, 5)},
		Workers:   []admin.Worker{{ID: "w1", State: "busy", Inflight: 1, Restarts: 2}},
	}
	h := admin.Handler(admin.Options{Stats: func() any { return snap }})
	resp, body := serve(t, h, "GET", "/stats")
	if got := resp.Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control: got %q, want no-store", got)
	}
	// The fields the dashboard reads, by their JSON names.
	var got struct {
		Admission struct {
			Limit        int               `json:"limit"`
			Saturation   float64           `json:"saturation"`
			LatencyNanos int64             `json:"latencyNanos"`
			Shed         map[string]uint64 `json:"shed"`
		} `json:"admission"`
		Conns   *struct{} `json:"conns"`
		Workers []struct {
			ID       string `json:"id"`
			State    string `json:"state"`
			Inflight int    `json:"inflight"`
			Restarts int    `json:"restarts"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(body), &got); err != nil {
		t.Fatalf("%v in %s", err, body)
	}
	a := got.Admission
	if a.Limit != 40 || a.Saturation != -1 || a.LatencyNanos != 1500000 || a.Shed["codel"] != 5 {
		t.Errorf("admission: got %+v, want limit 40, saturation -1, latencyNanos 1500000, shed codel 5", a)
	}
	if len(got.Workers) != 1 || got.Workers[0].ID != "w1" || got.Workers[0].State != "busy" || got.Workers[0].Restarts != 2 {
		t.Errorf("workers: got %+v, want w1 busy with 2 restarts", got.Workers)
	}
	if got.Conns != nil {
		t.Errorf("conns: got %v, want it left out when nil", got.Conns)
	}

	if _, body := serve(t, admin.Handler(admin.Options{}), "GET", "/stats"); strings.TrimSpace(body) != "{}" {
		t.Errorf("nil Stats: got %q, want {}", body)
	}
	bad := admin.Handler(admin.Options{Stats: func() any { return func() {} }})
	if resp, _ := serve(t, bad, "GET", "/stats"); resp.StatusCode != 500 {
		t.Errorf("unencodable stats: got %d, want 500", resp.StatusCode)
	}
}

// The dashboard loads nothing from anywhere: no URL with a scheme or a
// protocol-relative one, no external script, style, font or image, and a
// Content-Security-Policy that forbids them anyway. It polls /stats.
func TestDashboardSelfContained(t *testing.T) {
	resp, page := serve(t, admin.Handler(admin.Options{}), "GET", "/")
	if !strings.Contains(page, `fetch("./stats"`) {
		t.Error(`page does not fetch "./stats"`)
	}
	external := []*regexp.Regexp{
		regexp.MustCompile(`(?i)[a-z][a-z0-9+.-]*://`),            // http://, https://, ws://, ...
		regexp.MustCompile(`(?i)(src|href|action)\s*=\s*["']?//`), // protocol-relative
		regexp.MustCompile(`(?i)url\(\s*["']?(//|[a-z]+:)`),       // CSS url() off the page
		regexp.MustCompile(`(?i)@import`),
		regexp.MustCompile(`(?i)<(script|link|img|iframe)[^>]+(src|href)=`),
	}
	for _, re := range external {
		if m := re.FindString(page); m != "" {
			t.Errorf("external reference %q in the dashboard", m)
		}
	}
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "connect-src 'self'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("Content-Security-Policy %q lacks %q", csp, want)
		}
	}
	if strings.Contains(page, "/debug/pprof/") {
		t.Error("page links pprof, which is not served")
	}
}

func TestPprofOff(t *testing.T) {
	h := admin.Handler(admin.Options{})
	for _, path := range []string{"/debug/pprof/", "/debug/pprof/profile", "/debug/pprof/heap"} {
		if resp, _ := serve(t, h, "GET", path); resp.StatusCode != 404 {
			t.Errorf("GET %s without Pprof: got %d, want 404", path, resp.StatusCode)
		}
	}
}

// /metrics serves the registry it is given and nothing of the global one.
func TestMetricsRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	reg.MustRegister(admin.NewConnCollector("sluice", func() server.ConnStats { return server.ConnStats{Open: 9} }))
	_, body := serve(t, admin.Handler(admin.Options{Registry: reg}), "GET", "/metrics")
	if !strings.Contains(body, "sluice_connections_open 9") {
		t.Errorf("got %q, want sluice_connections_open 9", body)
	}
	if strings.Contains(body, "go_goroutines") {
		t.Error("the global registry's metrics are served")
	}
	resp, body := serve(t, admin.Handler(admin.Options{Registry: reg}), "GET", "/metrics", "Accept", "application/openmetrics-text; version=1.0.0")
	if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, "application/openmetrics-text") || !strings.HasSuffix(strings.TrimSpace(body), "# EOF") {
		t.Errorf("OpenMetrics: got Content-Type %q and body ending %q", got, body[max(0, len(body)-20):])
	}
}

// shed builds shed counts from reason, count pairs.
func shed(pairs ...any) admission.ShedCounts {
	var s admission.ShedCounts
	for i := 0; i < len(pairs); i += 2 {
		s[pairs[i].(admission.Reason)] = uint64(pairs[i+1].(int))
	}
	return s
}
