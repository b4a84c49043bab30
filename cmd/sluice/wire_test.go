package main

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
)

func TestAccessLog(t *testing.T) {
	var buf bytes.Buffer
	h := accessLog(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		admission.WriteShed(w, admission.ReasonQueueFull, time.Second)
	}), slog.New(slog.NewJSONHandler(&buf, nil)))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/page?x=1", nil))
	for _, want := range []string{`"msg":"access"`, `"method":"GET"`, `"path":"/page"`, `"status":503`, `"shed":"queue-full"`, `"bytes":13`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("access log lacks %s: %s", want, buf.String())
		}
	}
}

func TestCommandLineWorkers(t *testing.T) {
	cfg := config.Default()
	if err := commandLineWorkers(cfg, []string{"node", "worker.js"}); err != nil {
		t.Fatal(err)
	}
	w := cfg.Workers
	if w == nil || strings.Join(w.Command, " ") != "node worker.js" || w.Concurrency != 1 || w.Count != config.CountAuto {
		t.Fatalf("got workers %+v, want node worker.js with the workers defaults", w)
	}
	up, err := config.Parse("t", []byte("upstreams: {servers: [127.0.0.1:1]}"))
	if err != nil {
		t.Fatal(err)
	}
	if err := commandLineWorkers(up, []string{"node"}); err == nil {
		t.Fatal("a command with upstreams configured: got nil error, want a conflict")
	}
}

func TestStaticOptions(t *testing.T) {
	cfg, err := config.Parse("t", []byte(`upstreams:
  servers: ["127.0.0.1:8080", {address: "unix:/run/app.sock", concurrency: 4}]
  healthCheck: {path: /healthz, fails: 2, passes: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := staticOptions(cfg.Upstreams, nil)
	if len(o.Upstreams) != 2 {
		t.Fatalf("got %d upstreams, want 2", len(o.Upstreams))
	}
	if u := o.Upstreams[0]; u.Network != "tcp" || u.Addr != "127.0.0.1:8080" || u.Concurrency != 1 {
		t.Errorf("first upstream: got %+v", u)
	}
	if u := o.Upstreams[1]; u.Network != "unix" || u.Addr != "/run/app.sock" || u.Concurrency != 4 {
		t.Errorf("unix upstream: got %+v, want unix /run/app.sock concurrency 4", u)
	}
	if o.HealthPath != "/healthz" || o.Fall != 2 || o.Rise != 3 {
		t.Errorf("health check: got path %q fall %d rise %d", o.HealthPath, o.Fall, o.Rise)
	}
}
