package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The summary takes medians over the rounds and compares each setup with
// nginx -> HAProxy in the same round.
func TestSummarizeHop(t *testing.T) {
	pt := func(setup string, round int, rate, cpu float64) HopPoint {
		// cpu ms per 1,000 requests over 1,000 successes in one second.
		return HopPoint{Setup: setup, Round: round, Body: "json", Client: "h1", Mode: "fixed", Offered: 2000,
			Successes: 1000, Rate: rate, FrontCPU: cpu / 1000, Wall: 1}
	}
	points := []HopPoint{
		pt(HopSluice, 0, 2000, 100), pt(HopNginxHA, 0, 2000, 200),
		pt(HopSluice, 1, 1900, 90), pt(HopNginxHA, 1, 1000, 100),
		pt(HopSluice, 2, 2100, 120), pt(HopNginxHA, 2, 2000, 120),
	}
	rows := SummarizeHop(points)
	if len(rows) != 2 {
		t.Fatalf("got %d rows, want 2", len(rows))
	}
	s, n := rows[0], rows[1]
	if s.Setup != HopSluice || n.Setup != HopNginxHA {
		t.Fatalf("got setups %s, %s, want sluice first", s.Setup, n.Setup)
	}
	if s.Rate != 2000 || s.CPUPer1000 != 100 || s.Rounds != 3 {
		t.Errorf("sluice: got rate %v, cpu %v, rounds %d, want the medians 2000, 100 over 3", s.Rate, s.CPUPer1000, s.Rounds)
	}
	// Ratios per round: CPU 0.5, 0.9, 1.0; rate 1.0, 1.9, 1.05.
	if s.CPURatio != 0.9 || s.RateRatio != 1.05 {
		t.Errorf("sluice: got ratios cpu %v, rate %v, want the medians 0.9 and 1.05", s.CPURatio, s.RateRatio)
	}
	if n.CPURatio != 0 || n.RateRatio != 0 {
		t.Errorf("nginx-haproxy: got ratios %v, %v, want none", n.CPURatio, n.RateRatio)
	}
	md := HopMarkdown(rows)
	if !strings.Contains(md, "| sluice | json | h1 | 2000/s | 2000 | 100 ms | 0.90x | 1.05x |") {
		t.Errorf("markdown: got\n%s", md)
	}
}

// CPU per 1,000 counts every answer, sheds included; the share is cores.
func TestHopPointFigures(t *testing.T) {
	p := HopPoint{Successes: 300, Shed: 700, FrontCPU: 0.05, Wall: 10}
	if got := p.CPUPer1000(); got != 50 {
		t.Errorf("CPUPer1000: got %v, want 50", got)
	}
	if got := p.Share(); got != 0.005 {
		t.Errorf("Share: got %v, want 0.005", got)
	}
	if got := (HopPoint{}).CPUPer1000(); got != 0 {
		t.Errorf("CPUPer1000 of nothing: got %v, want 0", got)
	}
}

func TestIsShedKind(t *testing.T) {
	for kind, want := range map[string]bool{"503": true, "503:codel": true, "429:tenant": true, "timeout": false, "502": false, "conn-error": false} {
		if got := isShedKind(kind); got != want {
			t.Errorf("isShedKind(%q): got %v, want %v", kind, got, want)
		}
	}
}

// The fronts' configurations are the suite's with one line each: h2c for
// sluice, a second (HTTP/2) listener for nginx.
func TestHopConfigs(t *testing.T) {
	cfg, err := SluiceConfig{Listen: "127.0.0.1:1", Admin: "127.0.0.1:2", Workers: []string{"127.0.0.1:3"}, Concurrency: HopCPUConcurrency}.Render()
	if err != nil {
		t.Fatal(err)
	}
	got, err := withLine(cfg, "  trustedPeers: [127.0.0.1]\n", "  h2c: true\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "server:\n  listen: 127.0.0.1:1\n  trustedPeers: [127.0.0.1]\n  h2c: true\n") ||
		!strings.Contains(string(got), "concurrency: 8") {
		t.Errorf("sluice.yaml: got\n%s", got)
	}
	ncfg, err := NginxConfig{Listen: "127.0.0.1:4", Upstream: "127.0.0.1:5", Dir: "/tmp/x"}.Render()
	if err != nil {
		t.Fatal(err)
	}
	got, err = withLine(ncfg, "        listen 127.0.0.1:4 backlog=4096;\n", "        listen 127.0.0.1:6 http2 backlog=4096;\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "listen 127.0.0.1:4 backlog=4096;\n        listen 127.0.0.1:6 http2 backlog=4096;\n") {
		t.Errorf("nginx.conf: got\n%s", got)
	}
	if _, err := withLine(ncfg, "no such line\n", "x"); err == nil {
		t.Error("withLine: got no error for a missing line")
	}
}

// The closed loop counts 2xx answers as successes and the rest as errors,
// and stops at its end.
func TestHopClosedLoop(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 0 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	tr := hopTransport("h1", 4)
	defer tr.CloseIdleConnections()
	r := hopClosedLoop(context.Background(), srv.URL, 4, 200*time.Millisecond, tr)
	if r.successes == 0 || r.errors == 0 {
		t.Errorf("got %d successes and %d errors, want both", r.successes, r.errors)
	}
	if d := r.successes - r.errors; d < -4 || d > 4 {
		t.Errorf("got %d successes and %d errors, want about as many of each", r.successes, r.errors)
	}
	if r.elapsed > 5*time.Second {
		t.Errorf("took %v, want about 200 ms", r.elapsed)
	}
}

// The worker answers the 250-byte JSON, an 80 KB page, and spins
// when asked.
func TestHopWorker(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not on PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pool, err := startHopWorkers(ctx, node, 1, t.TempDir(), Layout{})
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Stop()
	c := newClient(5 * time.Second)
	base := "http://" + pool.Addrs[0] + "/"
	var b bytes.Buffer
	if status, err := get(ctx, c, base, &b); err != nil || status != 200 || b.Len() != 250 || !json.Valid(b.Bytes()) {
		t.Errorf("GET /: got %d, %d bytes, %v; want 200 and 250 bytes of JSON", status, b.Len(), err)
	}
	b.Reset()
	if status, err := get(ctx, c, base+"html", &b); err != nil || status != 200 || b.Len() < 80<<10-100 || b.Len() > 81<<10 {
		t.Errorf("GET /html: got %d, %d bytes, %v; want 200 and about 80 KB", status, b.Len(), err)
	}
	t0 := time.Now()
	if status, err := get(ctx, c, base+"?spin=50", io.Discard); err != nil || status != 200 {
		t.Errorf("GET /?spin=50: got %d, %v", status, err)
	}
	if d := time.Since(t0); d < 50*time.Millisecond {
		t.Errorf("GET /?spin=50 took %v, want at least 50 ms", d)
	}
}

// The Go floor answers as a front sheds, 503 with Retry-After, whatever
// is asked, and 200 only on its readiness path.
func TestShedFloor(t *testing.T) {
	h := ShedFloor()
	for _, target := range []string{"/", "/?spin=10", "/html", "/__sluice/ready"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.Code != http.StatusServiceUnavailable || w.Header().Get("Retry-After") != "1" {
			t.Errorf("GET %s: got %d, Retry-After %q, want 503 with Retry-After 1", target, w.Code, w.Header().Get("Retry-After"))
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, FloorReadyPath, nil))
	if w.Code != http.StatusOK {
		t.Errorf("GET %s: got %d, want 200", FloorReadyPath, w.Code)
	}
}

func TestFloorNginxConfig(t *testing.T) {
	dir := t.TempDir()
	b := floorNginxConfig("127.0.0.1:3995", dir)
	s := string(b)
	for _, want := range []string{
		"listen 127.0.0.1:3995 backlog=4096;",
		"location = " + FloorReadyPath,
		"return 503",
		"add_header Retry-After 1 always;",
		"pid " + dir + "/nginx.pid;",
		"access_log off;",
		"daemon off;",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("floor nginx.conf lacks %q:\n%s", want, s)
		}
	}
	checkWithTool(t, "nginx", b, "nginx.conf", func(path string) []string { return []string{"-t", "-q", "-p", dir, "-c", path} })
}
