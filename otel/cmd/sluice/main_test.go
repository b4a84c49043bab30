//go:build unix

package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// The test binary is also the traced sluice (envMain) and its worker
// (envWorker), so that the test runs the real command as a child process.
const (
	envMain   = "SLUICE_OTEL_TEST_MAIN"
	envWorker = "SLUICE_OTEL_TEST_WORKER"
	envHold   = "SLUICE_OTEL_TEST_HOLD" // the FIFO a /hold request waits on
	readyPath = "/__worker/ready"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv("SLUICE_GUARD_LIFELINE") != "":
		main() // a worker's guard: supervisor.GuardMain in run
	case os.Getenv(envWorker) == "1":
		os.Exit(runTestWorker())
	case os.Getenv(envMain) == "1":
		main()
	}
	os.Exit(m.Run())
}

// runTestWorker is a worker that tells what it was sent: its answer to any
// path carries the traceparent it received (Seen-Traceparent). /hold
// writes "holding" to stdout, then answers when its FIFO is written and
// closed.
func runTestWorker() int {
	ln, err := net.Listen("tcp", "127.0.0.1:"+os.Getenv("PORT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	mux := http.NewServeMux()
	mux.HandleFunc(readyPath, func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			fmt.Println("holding")
			f, err := os.Open(os.Getenv(envHold))
			if err == nil {
				io.Copy(io.Discard, f)
				f.Close()
			}
		}
		w.Header().Set("Seen-Traceparent", r.Header.Get("Traceparent"))
		io.WriteString(w, "ok\n")
	})
	http.Serve(ln, mux)
	return 0
}

// collector is an OTLP/HTTP endpoint that keeps the spans it is sent.
type collector struct {
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "not an OTLP trace export", 400)
		return
	}
	c.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				c.services = append(c.services, kv.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			c.spans = append(c.spans, ss.Spans...)
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// trace returns the spans of one trace by name.
func (c *collector) trace(traceID string) map[string]*tracepb.Span {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]*tracepb.Span{}
	for _, s := range c.spans {
		if hex.EncodeToString(s.TraceId) == traceID {
			out[s.Name] = s
		}
	}
	return out
}

func attr(s *tracepb.Span, key string) string {
	for _, kv := range s.GetAttributes() {
		if kv.Key == key {
			v := kv.GetValue()
			if v.GetStringValue() != "" {
				return v.GetStringValue()
			}
			return fmt.Sprint(v.GetIntValue())
		}
	}
	return ""
}

// child is the traced sluice, run as a child process.
type child struct {
	cmd    *exec.Cmd
	mu     sync.Mutex
	out    bytes.Buffer
	notify chan struct{}
	done   chan struct{}
}

func startChild(t *testing.T, env []string, args ...string) *child {
	c := &child{cmd: exec.Command(os.Args[0], args...), notify: make(chan struct{}, 1), done: make(chan struct{})}
	c.cmd.Env = append(os.Environ(), env...)
	stderr, err := c.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.cmd.Stdout = c.cmd.Stderr
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			c.mu.Lock()
			c.out.Write(sc.Bytes())
			c.out.WriteByte('\n')
			c.mu.Unlock()
			select {
			case c.notify <- struct{}{}:
			default:
			}
		}
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill() // its own process only: a no-op once it has exited
		<-c.done
		c.cmd.Wait()
		if t.Failed() {
			t.Logf("sluice's output:\n%s", c.output())
		}
	})
	return c
}

// stop sends SIGTERM and waits (at most 30 s) for the drain and the
// export of the last spans.
func (c *child) stop(t *testing.T) {
	t.Helper()
	c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatal("sluice did not exit in 30s after SIGTERM")
	}
	if err := c.cmd.Wait(); err != nil {
		t.Errorf("sluice exited with %v after SIGTERM, want a clean drain", err)
	}
}

func (c *child) output() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.out.String()
}

// waitFor waits (at most 20 s) for a line of output containing s.
func (c *child) waitFor(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(20 * time.Second)
	for !strings.Contains(c.output(), s) {
		select {
		case <-c.notify:
		case <-c.done:
			t.Fatalf("sluice exited before writing %q", s)
		case <-timeout:
			t.Fatalf("no %q from sluice in 20s", s)
		}
	}
}

func get(t *testing.T, url, traceparent string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if traceparent != "" {
		req.Header.Set("Traceparent", traceparent)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp
}

// waitReady waits (at most 10 s) for sluice's readiness: the proxy learns
// of a ready worker just after the supervisor logs it.
func waitReady(t *testing.T, url string, c *child) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := testutil.WaitOK(ctx, url, c.done); err != nil {
		t.Fatalf("%s not ready: %v", url, err)
	}
}

// The traced command end to end: `sluice serve` with a worker, exporting
// over OTLP/HTTP to a local collector. A served request continues the
// client's trace with the request, queue and worker spans, and the worker
// is sent a traceparent whose parent is sluice's request span; a shed
// request's queue span names the reason; the spans are sent at exit.
func TestTracedServe(t *testing.T) {
	col := &collector{}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	dir := t.TempDir()
	fifo := filepath.Join(dir, "hold")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	addr := testutil.FreeAddr(t)
	// No lookahead: with the one slot held, the next request is shed
	// rather than sent to wait in the worker.
	cfg := testutil.WriteConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 0, backpressure: {queueSize: 0}}
admin: {listen: "off"}
proxy: {lookahead: 0}
workers:
  count: 1
  concurrency: 1
  readyPath: %s
  env: {%s: "1", %s: %q}
`, addr, readyPath, envWorker, envHold, fifo))
	p := startChild(t, []string{envMain + "=1", "OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp.URL, "OTEL_SERVICE_NAME=sluice-e2e"},
		"serve", "-c", cfg, "--", os.Args[0])
	p.waitFor(t, "worker ready")
	base := "http://" + addr
	waitReady(t, base+"/__sluice/ready", p)

	const client = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	served := get(t, base+"/page", client)
	if served.StatusCode != 200 {
		t.Fatalf("got %d, want 200", served.StatusCode)
	}
	held := make(chan *http.Response, 1)
	go func() {
		resp, err := http.Get(base + "/hold")
		if err == nil {
			resp.Body.Close()
		}
		held <- resp
	}()
	p.waitFor(t, "holding")
	shed := get(t, base+"/shed-me", "")
	if shed.StatusCode != 503 {
		t.Fatalf("got %d with the one slot held, want 503", shed.StatusCode)
	}
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if resp := <-held; resp == nil || resp.StatusCode != 200 {
		t.Fatalf("the held request failed: %v", resp)
	}
	p.stop(t)

	checkServed(t, col, served)
	checkShed(t, col, shed)
	if col.services[0] != "sluice-e2e" {
		t.Errorf("got service.name %q, want OTEL_SERVICE_NAME's", col.services[0])
	}
}

// Library mode (no workers: the embedded app behind the admission
// middleware) is traced too: the request span and the wait for a slot.
func TestTracedServeLibrary(t *testing.T) {
	col := &collector{}
	otlp := httptest.NewServer(col)
	defer otlp.Close()
	addr := testutil.FreeAddr(t)
	cfg := testutil.WriteConfig(t, fmt.Sprintf("server: {listen: %q, drainDelay: 0}\nadmin: {listen: \"off\"}\n", addr))
	p := startChild(t, []string{envMain + "=1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=" + otlp.URL + "/v1/traces"}, "serve", "-c", cfg)
	base := "http://" + addr
	waitReady(t, base+"/__sluice/ready", p)
	const client = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	if resp := get(t, base+"/?sleep=1", client); resp.StatusCode != 200 {
		t.Fatalf("got %d, want 200", resp.StatusCode)
	}
	p.stop(t)
	spans := col.trace("0af7651916cd43dd8448eb211c80319c")
	req, queue := spans["sluice.request"], spans["sluice.queue"]
	if req == nil || queue == nil || len(spans) != 2 {
		t.Fatalf("got spans %v, want sluice.request and sluice.queue", spans)
	}
	if hex.EncodeToString(req.ParentSpanId) != "b7ad6b7169203331" || !bytes.Equal(queue.ParentSpanId, req.SpanId) {
		t.Errorf("request span's parent %x, queue span's %x; want the client's, the request span", req.ParentSpanId, queue.ParentSpanId)
	}
	if col.services[0] != "sluice" {
		t.Errorf("got service.name %q, want sluice by default", col.services[0])
	}
}

func checkServed(t *testing.T, col *collector, resp *http.Response) {
	t.Helper()
	spans := col.trace("4bf92f3577b34da6a3ce929d0e0e4736")
	req, queue, worker := spans["sluice.request"], spans["sluice.queue"], spans["sluice.worker"]
	if req == nil || queue == nil || worker == nil {
		t.Fatalf("got spans %v in the client's trace, want sluice.request, sluice.queue, sluice.worker", spans)
	}
	if got := hex.EncodeToString(req.ParentSpanId); got != "00f067aa0ba902b7" || req.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("request span: parent %s, kind %v; want the client's span, server", got, req.Kind)
	}
	for _, s := range []*tracepb.Span{queue, worker} {
		if !bytes.Equal(s.ParentSpanId, req.SpanId) {
			t.Errorf("%s: parent %x, want the request span %x", s.Name, s.ParentSpanId, req.SpanId)
		}
	}
	if queue.StartTimeUnixNano < req.StartTimeUnixNano || worker.StartTimeUnixNano < queue.EndTimeUnixNano ||
		worker.EndTimeUnixNano <= worker.StartTimeUnixNano || worker.EndTimeUnixNano > req.EndTimeUnixNano {
		t.Errorf("spans out of order: request %d..%d, queue %d..%d, worker %d..%d", req.StartTimeUnixNano, req.EndTimeUnixNano,
			queue.StartTimeUnixNano, queue.EndTimeUnixNano, worker.StartTimeUnixNano, worker.EndTimeUnixNano)
	}
	if attr(worker, "sluice.worker.id") != "1" || attr(req, "http.response.status_code") != "200" {
		t.Errorf("worker id %q, status %q; want 1, 200", attr(worker, "sluice.worker.id"), attr(req, "http.response.status_code"))
	}
	want := fmt.Sprintf("00-4bf92f3577b34da6a3ce929d0e0e4736-%x-01", req.SpanId)
	if got := resp.Header.Get("Seen-Traceparent"); got != want {
		t.Errorf("the worker got traceparent %q, want %q: sluice's request span as its parent", got, want)
	}
	if id := resp.Header.Get("X-Request-Id"); id == "" || attr(req, "sluice.request.id") != id {
		t.Errorf("request span's sluice.request.id %q, response's X-Request-Id %q; want the same", attr(req, "sluice.request.id"), id)
	}
}

func checkShed(t *testing.T, col *collector, resp *http.Response) {
	t.Helper()
	col.mu.Lock()
	var traceID string
	for _, s := range col.spans {
		if s.Name == "sluice.request" && attr(s, "url.path") == "/shed-me" {
			traceID = hex.EncodeToString(s.TraceId)
		}
	}
	col.mu.Unlock()
	spans := col.trace(traceID)
	queue, req := spans["sluice.queue"], spans["sluice.request"]
	if req == nil || queue == nil || spans["sluice.worker"] != nil {
		t.Fatalf("got spans %v for the shed request, want sluice.request and sluice.queue only", spans)
	}
	if reason := resp.Header.Get("Sluice-Shed"); reason == "" || attr(queue, "sluice.shed") != reason ||
		queue.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("queue span: sluice.shed %q, status %v; want the response's reason %q, an error", attr(queue, "sluice.shed"), queue.GetStatus(), reason)
	}
	if attr(req, "http.response.status_code") != "503" || req.GetStatus().GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("request span: status code %q, status %v; want 503, an error", attr(req, "http.response.status_code"), req.GetStatus())
	}
}
