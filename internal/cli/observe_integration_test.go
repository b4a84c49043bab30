package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/testutil"
)

var hex32 = regexp.MustCompile(`^[0-9a-f]{32}$`)

// headerLog is an upstream that records each request's header.
type headerLog struct {
	mu   sync.Mutex
	seen []http.Header
}

func (u *headerLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != demo.ReadyPath {
		u.mu.Lock()
		u.seen = append(u.seen, r.Header.Clone())
		u.mu.Unlock()
	}
	w.Write([]byte("ok"))
}

func (u *headerLog) last() http.Header {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.seen[len(u.seen)-1]
}

// jsonRecords returns the JSON records in out with msg set to msg.
func jsonRecords(out, msg string) []map[string]any {
	var recs []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			recs = append(recs, m)
		}
	}
	return recs
}

// waitOutput waits (at most 10 s) for the process's output to satisfy ok.
func waitOutput(t *testing.T, p *testutil.Process, ok func(out string) bool) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out := p.Out.String()
		if ok(out) {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("output still lacks what was expected after 10s")
		}
		time.Sleep(20 * time.Millisecond) // polling a child's output: no event to wait on
	}
}

// Through the built binary: the request ID (a client's replaced), the
// arrival time and the client's traceparent reach the upstream; the ID and
// Server-Timing come back; the access log has a JSON record of it all.
func TestServeRequestVisibility(t *testing.T) {
	up := &headerLog{}
	upstream := httptest.NewServer(up)
	defer upstream.Close()
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms, accessLog: true, serverTiming: true, generateTraceparent: true}
admin: {listen: "off"}
upstreams:
  servers: [{address: %q, concurrency: 1}]
  healthCheck: {path: %s, interval: 50ms, timeout: 1s, fails: 1, passes: 1}
`, addr, strings.TrimPrefix(upstream.URL, "http://"), demo.ReadyPath))
	p := startSluice(t, "serve", "-log", "json", "-c", cfg)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 10*time.Second); err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req, _ := http.NewRequest("GET", "http://"+addr+"/page", nil)
	req.Header.Set("X-Request-Id", "forged")
	req.Header.Set("Traceparent", tp)
	before := time.Now().UnixMicro()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	after := time.Now().UnixMicro()

	id := resp.Header.Get("X-Request-Id")
	if !hex32.MatchString(id) {
		t.Errorf("got X-Request-Id %q on the response, want 32 hex digits (the client's is not trusted)", id)
	}
	if st := resp.Header.Get("Server-Timing"); !regexp.MustCompile(`^queue;dur=\d+\.\d, worker;dur=\d+\.\d$`).MatchString(st) {
		t.Errorf("got Server-Timing %q, want queue;dur=N.N, worker;dur=N.N", st)
	}
	h := up.last()
	if got := h.Get("X-Request-Id"); got != id {
		t.Errorf("upstream got X-Request-Id %q, want the response's %q", got, id)
	}
	start, err := strconv.ParseInt(strings.TrimPrefix(h.Get("X-Request-Start"), "t="), 10, 64)
	if !strings.HasPrefix(h.Get("X-Request-Start"), "t=") || err != nil || start < before || start > after {
		t.Errorf("upstream got X-Request-Start %q, want t=<µs since the epoch> in [%d, %d]", h.Get("X-Request-Start"), before, after)
	}
	if got := h.Get("Traceparent"); got != tp {
		t.Errorf("upstream got traceparent %q, want the client's %q", got, tp)
	}

	// Without a traceparent: one is generated, its trace id the request ID.
	code, hdr, _ := get("http://"+addr+"/other", 5*time.Second)
	id2 := hdr.Get("X-Request-Id")
	if got, want := up.last().Get("Traceparent"), "00-"+id2+"-"; code != 200 || !strings.HasPrefix(got, want) || !strings.HasSuffix(got, "-01") || len(got) != 55 {
		t.Errorf("got %d, upstream traceparent %q; want 200, %s<span id>-01", code, got, want)
	}

	out := waitOutput(t, p, func(out string) bool { return len(jsonRecords(out, "access")) > 0 })
	rec := jsonRecords(out, "access")[0]
	for k, v := range map[string]any{"method": "GET", "path": "/page", "status": 200.0, "bytes": 2.0, "shed": "",
		"id": id, "trace": "4bf92f3577b34da6a3ce929d0e0e4736"} {
		if rec[k] != v {
			t.Errorf("access record %s: got %v, want %v", k, rec[k], v)
		}
	}
	for _, k := range []string{"ms", "queue_ms", "worker", "worker_ms"} {
		if v, ok := rec[k].(float64); !ok || v < 0 {
			t.Errorf("access record %s: got %v, want a number >= 0", k, rec[k])
		}
	}
}

// Under -log json the workers' output lines are JSON records naming the
// worker and the stream.
func TestServeWorkerOutputJSON(t *testing.T) {
	addr := freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: "off"}
workers:
  count: 1
  readyPath: %s
  env: {%s: "1"}
`, addr, demo.ReadyPath, runMainEnv))
	p := startSluice(t, "serve", "-log", "json", "-c", cfg, "--",
		"sh", "-c", `echo "worker says hello"; exec "$0" demo-worker`, os.Args[0])
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	out := waitOutput(t, p, func(out string) bool { return len(jsonRecords(out, "worker says hello")) > 0 })
	rec := jsonRecords(out, "worker says hello")[0]
	if rec["worker"] != 1.0 || rec["stream"] != "stdout" || rec["level"] != "INFO" {
		t.Errorf("got record %v, want worker 1, stream stdout, level INFO", rec)
	}
	if strings.Contains(out, "worker 1: worker says hello") {
		t.Error("the worker's line was also written as plain text")
	}
}
