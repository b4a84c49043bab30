package cli

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/internal/loadgen"
)

func TestBenchFlagErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"unknown flag", []string{"-nope"}, "-nope"},
		{"bad rate", []string{"-rate", "fast"}, "-rate"},
		{"negative rate", []string{"-rate", "-5"}, "-rate"},
		{"zero duration", []string{"-duration", "0s"}, "-duration"},
		{"bad ramp", []string{"-ramp", "100:forever"}, "-ramp"},
		{"ramp with rate", []string{"-ramp", "100:1s", "-rate", "5"}, "-ramp"},
		{"zero timeout", []string{"-timeout", "0s"}, "-timeout"},
		{"zero cap", []string{"-max-outstanding", "0"}, "-max-outstanding"},
		{"bad header", []string{"-H", "NoColon"}, "-H"},
		{"bad tenants", []string{"-tenants", "a=lots"}, "-tenants"},
		{"unknown priority", []string{"-priorities", "urgent=1"}, "-priorities"},
		{"bad query mix", []string{"-query", "cpu=5:x"}, "-query"},
		{"bad retry", []string{"-retry", "sometimes"}, "-retry"},
		{"attempts without retry", []string{"-attempts", "3"}, "-attempts"},
		{"negative attempts", []string{"-retry", "immediate", "-attempts", "-1"}, "-attempts"},
		{"negative bucket", []string{"-bucket", "-1s"}, "-bucket"},
		{"missing body file", []string{"-body", "@/nonexistent/body"}, "-body"},
		{"bad URL", []string{"ftp://127.0.0.1/"}, "URL"},
		{"two URLs", []string{"http://127.0.0.1/", "http://127.0.0.1/"}, "one URL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runBench(t.Context(), tt.args, &stdout, &stderr)
			if code != 2 {
				t.Errorf("exit code %d, want 2; stderr: %s", code, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr %q does not name %q", stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout = %q, want nothing", stdout.String())
			}
		})
	}
}

func TestBenchRefusesRemoteTargets(t *testing.T) {
	tests := []struct {
		target  string
		refused bool
	}{
		{"http://192.0.2.1:8080/", true},
		{"http://example.com/", true},
		{"https://10.0.0.1/", true},
		{"127.0.0.1:3000", false},
		{"http://127.0.0.2/", false},
		{"http://[::1]:3000/", false},
		{"http://localhost:3000/", false},
		{"http://app.localhost/", false},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			var stderr bytes.Buffer
			br, err := parseBenchArgs([]string{tt.target}, &stderr)
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "not a loopback address") || !strings.Contains(err.Error(), "-allow-remote") {
					t.Fatalf("error %v, want a refusal that mentions -allow-remote", err)
				}
				if code := runBench(t.Context(), []string{tt.target}, io.Discard, &stderr); code != 2 {
					t.Errorf("exit code %d, want 2", code)
				}
				br, err = parseBenchArgs([]string{"-allow-remote", tt.target}, &stderr)
				if err != nil || br.cfg.LoopbackOnly {
					t.Errorf("with -allow-remote: error %v, LoopbackOnly %v; want accepted without the dial check", err, br.cfg.LoopbackOnly)
				}
				return
			}
			if err != nil {
				t.Fatalf("error %v, want the loopback target accepted", err)
			}
			if !br.cfg.LoopbackOnly {
				t.Error("LoopbackOnly is off, want the dialer to check the resolved address")
			}
		})
	}
}

func TestBenchHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runBench(t.Context(), []string{"-h"}, &stdout, &stderr); code != 0 {
		t.Errorf("exit code %d, want 0", code)
	}
	for _, want := range []string{"usage: sluice bench", "your own servers", "-allow-remote", "-ramp", "-retry"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

func TestBenchParsesIntoConfig(t *testing.T) {
	br, err := parseBenchArgs([]string{
		"-ramp", "100:1s,100->800:30s", "-timeout", "2s", "-max-outstanding", "50", "-keepalive=false",
		"-H", "X-A: 1", "-H", "X-A: 2", "-H", "Host: app.test", "-tenants", "a=90,b=10", "-priorities", "critical=1,sheddable=1",
		"-query", "cpu=5:90,cpu=50:10", "-retry", "retry-after", "-attempts", "4", "-seed", "9", "-method", "post", "-body", "{}",
		"http://127.0.0.1:8080/render",
	}, io.Discard)
	if err != nil {
		t.Fatalf("parseBenchArgs: %v", err)
	}
	c := br.cfg
	checks := []struct {
		name      string
		got, want any
	}{
		{"URL", c.URL, "http://127.0.0.1:8080/render"},
		{"phases", len(c.Phases), 2},
		{"ramp end", c.Phases[1].RampTo, 800.0},
		{"timeout", c.Timeout.String(), "2s"},
		{"cap", c.MaxOutstanding, 50},
		{"keep-alive off", c.DisableKeepAlives, true},
		{"repeated header", strings.Join(c.Header.Values("X-A"), ","), "1,2"},
		{"host", c.Header.Get("Host"), "app.test"},
		{"tenant header", c.HeaderMixes[0].Name, "Sluice-Tenant"},
		{"tenant weight", c.HeaderMixes[0].Values[1], loadgen.Weighted{Value: "b", Weight: 10}},
		{"priority header", c.HeaderMixes[1].Name, "Sluice-Priority"},
		{"query mix", c.QueryMix[1], loadgen.Weighted{Value: "cpu=50", Weight: 10}},
		{"retry", c.Retry, loadgen.RetryRetryAfter},
		{"attempts", c.MaxAttempts, 4},
		{"seed", c.Seed, uint64(9)},
		{"method", c.Method, "POST"},
		{"body", string(c.Body), "{}"},
	}
	for _, ck := range checks {
		if ck.got != ck.want {
			t.Errorf("%s = %v, want %v", ck.name, ck.got, ck.want)
		}
	}
}

func TestBenchRunsAndWritesReports(t *testing.T) {
	var arrivals atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrivals.Add(1)
		if r.URL.Query().Get("cpu") == "50" {
			w.Header().Set("Sluice-Shed", "queue-full")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	jsonPath, svgPath := filepath.Join(dir, "report.json"), filepath.Join(dir, "chart.svg")
	var stdout, stderr bytes.Buffer
	code := runBench(t.Context(), []string{
		"-rate", "50", "-duration", "300ms", "-query", "cpu=5:1,cpu=50:1", "-json", jsonPath, "-svg", svgPath, srv.URL,
	}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("exit code %d, want 0; stderr: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "total") || !strings.Contains(stdout.String(), "503:queue-full=") {
		t.Errorf("table lacks the total row or the shed count:\n%s", stdout.String())
	}
	if strings.Contains(stderr.String(), "\r") {
		t.Error("progress line written to a stderr that is not a terminal")
	}
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rep loadgen.Report
	if err := json.Unmarshal(raw, &rep); err != nil {
		t.Fatalf("-json output: %v", err)
	}
	if rep.Total.Requests != 15 || rep.Total.Attempts != arrivals.Load() {
		t.Errorf("report: %d requests and %d attempts, server saw %d; want 15 requests, attempts = arrivals",
			rep.Total.Requests, rep.Total.Attempts, arrivals.Load())
	}
	svg, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(svg, new(struct{ XMLName xml.Name })); err != nil {
		t.Errorf("-svg output is not XML: %v", err)
	}
}

func TestBenchJSONToStdout(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	var stdout, stderr bytes.Buffer
	if code := runBench(t.Context(), []string{"-rate", "20", "-duration", "100ms", "-json", "-", srv.URL}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, want 0; stderr: %s", code, stderr.String())
	}
	var rep loadgen.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("stdout is not the JSON report alone: %v\n%s", err, stdout.String())
	}
}

func TestBenchSetupErrorExitsOne(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	var stderr bytes.Buffer
	code := runBench(t.Context(), []string{"-rate", "20", "-duration", "100ms", "-svg", filepath.Join(t.TempDir(), "no", "such", "dir.svg"), srv.URL}, io.Discard, &stderr)
	if code != 1 || !strings.Contains(stderr.String(), "-svg") {
		t.Errorf("exit code %d, stderr %q; want 1 naming -svg", code, stderr.String())
	}
}
