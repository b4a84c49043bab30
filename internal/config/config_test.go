package config_test

import (
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
)

func mustParse(t *testing.T, src string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse: %v\nsource:\n%s", err, src)
	}
	return cfg
}

func TestParseEmptyIsDefault(t *testing.T) {
	for name, src := range map[string]string{
		"empty":         "",
		"comments only": "# nothing here\n\n# at all\n",
		"document mark": "---\n",
		"null document": "~\n",
		"null sections": "server:\nadmin:\nworkers:\nupstreams:\nroutes:\n",
		"empty mapping": "{}\n",
	} {
		t.Run(name, func(t *testing.T) {
			got := mustParse(t, src)
			if want := config.Default(); !reflect.DeepEqual(got, want) {
				t.Errorf("got %+v, want the defaults %+v", got, want)
			}
		})
	}
}

func TestDefaultMatchesSeed(t *testing.T) {
	c := config.Default()
	s, b := c.Server, c.Server.Backpressure
	for _, tc := range []struct {
		name      string
		got, want any
	}{
		{"keepAliveTimeout", s.KeepAliveTimeout, 65 * time.Second},
		{"headersTimeout", s.HeadersTimeout, 66 * time.Second},
		{"requestTimeout", s.RequestTimeout, 30 * time.Second},
		{"shutdownTimeout", s.ShutdownTimeout, 25 * time.Second},
		{"maxConcurrentRequests", s.MaxConcurrentRequests, 100},
		{"backpressure.enabled", b.Enabled, true},
		{"backpressure.initialLimit", b.StartLimit(), 1000},
		{"backpressure.minLimit", b.MinLimit, 1},
		{"backpressure.maxLimit", b.MaxLimit, 1000},
		{"backpressure.saturationMax", b.SaturationMax, 0.95},
		{"backpressure.sampleWindow", b.SampleWindow, time.Second},
		{"backpressure.smoothingFactor", b.SmoothingFactor, 0.2},
		{"backpressure.queueSize", b.QueueSize, config.QueueSizeAuto},
		{"backpressure.queueTimeout", b.QueueTimeout, 5 * time.Second},
		{"admin.listen", c.Admin.Listen, "127.0.0.1:9090"},
		{"workers", c.Workers, (*config.Workers)(nil)},
		{"upstreams", c.Upstreams, (*config.Upstreams)(nil)},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, tc.got, tc.want)
		}
	}
	if err := c.Validate(); err != nil {
		t.Errorf("Default().Validate(): got %v, want nil", err)
	}
}

func TestDurationForms(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  time.Duration
	}{
		{"65000", 65 * time.Second},
		{"65s", 65 * time.Second},
		{"1m5s", 65 * time.Second},
		{`"65000"`, 65 * time.Second},
		{"65_000", 65 * time.Second},
		{"2.5", 2500 * time.Microsecond},
		{"250ms", 250 * time.Millisecond},
		{"0", 0},
		{"1h", time.Hour},
	} {
		t.Run(tc.value, func(t *testing.T) {
			cfg := mustParse(t, "server:\n  keepAliveTimeout: "+tc.value+"\n")
			if got := cfg.Server.KeepAliveTimeout; got != tc.want {
				t.Errorf("keepAliveTimeout: %s: got %v, want %v", tc.value, got, tc.want)
			}
		})
	}
}

func TestSizeForms(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  int64
	}{
		{"65536", 65536},
		{"64KiB", 64 << 10},
		{"64kib", 64 << 10},
		{`"64 KiB"`, 64 << 10},
		{"64KB", 64000},
		{"10MiB", 10 << 20},
		{"1.5KiB", 1536},
		{"2GiB", 2 << 30},
		{"1TB", 1e12},
		{"512B", 512},
		{"1e3", 1000},
		{"0", 0},
	} {
		t.Run(tc.value, func(t *testing.T) {
			cfg := mustParse(t, "proxy:\n  maxBodyBytes: "+tc.value+"\n")
			if got := cfg.Proxy.MaxBodyBytes; got != tc.want {
				t.Errorf("maxBodyBytes: %s: got %d, want %d", tc.value, got, tc.want)
			}
		})
	}
}

func TestParseDuration(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "65000", want: 65 * time.Second},
		{in: " 65s ", want: 65 * time.Second},
		{in: "1.5", want: 1500 * time.Microsecond},
		{in: "-1s", want: -time.Second},
		{in: "abc", wantErr: true},
		{in: "", wantErr: true},
		{in: "5 s", wantErr: true},
		{in: "1e300", wantErr: true},
		{in: "NaN", wantErr: true},
	} {
		got, err := config.ParseDuration(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseDuration(%q): got %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{in: "64KiB", want: 65536},
		{in: "1.5 MB", want: 1500000},
		{in: "-1KiB", want: -1024},
		{in: "8EiB", wantErr: true},
		{in: "1.1B", wantErr: true},
		{in: "10K", wantErr: true},
		{in: "KiB", wantErr: true},
		{in: "", wantErr: true},
		{in: "1/2KiB", wantErr: true},
		{in: "1-2", wantErr: true},
		{in: "9999999TiB", wantErr: true},
		{in: "9223372036854775807", want: 1<<63 - 1},
		{in: "9223372036854775808", wantErr: true},
	} {
		got, err := config.ParseSize(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseSize(%q): got %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestEluMaxAlias(t *testing.T) {
	cfg := mustParse(t, "server:\n  backpressure:\n    eluMax: 0.8\n")
	if got := cfg.Server.Backpressure.SaturationMax; got != 0.8 {
		t.Errorf("eluMax: 0.8: got saturationMax %v, want 0.8", got)
	}
	cfg = mustParse(t, "server:\n  backpressure:\n    saturationMax: 0.7\n")
	if got := cfg.Server.Backpressure.SaturationMax; got != 0.7 {
		t.Errorf("saturationMax: 0.7: got %v, want 0.7", got)
	}
}

func TestWorkersCount(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  config.Count
	}{
		{"auto", config.CountAuto},
		{"4", 4},
		{`"4"`, 4},
		{"1", 1},
	} {
		t.Run(tc.value, func(t *testing.T) {
			cfg := mustParse(t, "workers:\n  command: node w.js\n  count: "+tc.value+"\n")
			if got := cfg.Workers.Count; got != tc.want {
				t.Errorf("count: %s: got %d, want %d", tc.value, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"0", "-1", "four", "1.5", "[2]", "AUTO", `""`, "true", "99999999999"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := config.Parse("w.yaml", []byte("workers:\n  command: node w.js\n  count: "+bad+"\n"))
			checkOne(t, err, 3, "workers.count", "positive whole number or \"auto\"")
		})
	}
}

func TestQueueSize(t *testing.T) {
	for _, tc := range []struct {
		value string
		want  config.QueueSize
	}{
		{"auto", config.QueueSizeAuto},
		{"0", 0},
		{"250", 250},
		{`"250"`, 250},
		{"1_000", 1000},
	} {
		t.Run(tc.value, func(t *testing.T) {
			cfg := mustParse(t, "server:\n  backpressure:\n    queueSize: "+tc.value+"\n")
			if got := cfg.Server.Backpressure.QueueSize; got != tc.want {
				t.Errorf("queueSize: %s: got %d, want %d", tc.value, got, tc.want)
			}
		})
	}
	for _, bad := range []string{"-1", "many", "1.5", "[2]", "AUTO", `""`, "true", "99999999999"} {
		t.Run("bad "+bad, func(t *testing.T) {
			_, err := config.Parse("s.yaml", []byte("server:\n  backpressure:\n    queueSize: "+bad+"\n"))
			checkOne(t, err, 3, "server.backpressure.queueSize", "whole number (0: no queue) or \"auto\"")
		})
	}
}

func TestCountResolve(t *testing.T) {
	for _, tc := range []struct {
		count      config.Count
		cpus, want int
	}{
		{config.CountAuto, 8, 8},
		{config.CountAuto, 0, 1},
		{3, 8, 3},
	} {
		if got := tc.count.Resolve(tc.cpus); got != tc.want {
			t.Errorf("Count(%d).Resolve(%d): got %d, want %d", tc.count, tc.cpus, got, tc.want)
		}
	}
	if got := (config.CrashLoop{}).Limit(4); got != 20 {
		t.Errorf("CrashLoop{}.Limit(4): got %d, want 20 (5 x count)", got)
	}
	if got := (config.CrashLoop{Exits: 7}).Limit(4); got != 7 {
		t.Errorf("CrashLoop{Exits: 7}.Limit(4): got %d, want 7", got)
	}
	if got := (config.Backpressure{InitialLimit: 10, MaxLimit: 50}).StartLimit(); got != 10 {
		t.Errorf("StartLimit with initialLimit 10: got %d, want 10", got)
	}
}

func TestWorkersSection(t *testing.T) {
	cfg := mustParse(t, `
workers:
  command: ["node", "--max-old-space-size=512", "w.js"]
  env: {NODE_ENV: production, THREADS: 4, EMPTY: }
`)
	w := cfg.Workers
	if want := []string{"node", "--max-old-space-size=512", "w.js"}; !reflect.DeepEqual(w.Command, want) {
		t.Errorf("command: got %q, want %q", w.Command, want)
	}
	if want := map[string]string{"NODE_ENV": "production", "THREADS": "4", "EMPTY": ""}; !reflect.DeepEqual(w.Env, want) {
		t.Errorf("env: got %q, want %q", w.Env, want)
	}
	// Keys not written keep the section's defaults.
	if w.Count != config.CountAuto || !w.Concurrency.Auto() || w.MaxConcurrency != 64 || w.Address != config.AddressPort ||
		w.StartTimeout != 30*time.Second || w.RestartBackoff != (config.Backoff{Initial: 100 * time.Millisecond, Max: 30 * time.Second}) ||
		w.CrashLoop != (config.CrashLoop{Window: time.Minute}) || w.StopTimeout != 10*time.Second {
		t.Errorf("workers defaults: got %+v", w)
	}

	cfg = mustParse(t, "workers:\n  command: \"  python3  -m   app \"\n")
	if want := []string{"python3", "-m", "app"}; !reflect.DeepEqual(cfg.Workers.Command, want) {
		t.Errorf("command as a string: got %q, want %q", cfg.Workers.Command, want)
	}
}

func TestUpstreamsSection(t *testing.T) {
	cfg := mustParse(t, `
upstreams:
  servers:
    - 127.0.0.1:8080
    - {address: "unix:/run/app.sock", concurrency: 4}
    - address: "[::1]:9000"
      concurrency: auto
      maxConcurrency: 12
`)
	want := []config.Upstream{
		{Address: "127.0.0.1:8080", Concurrency: config.ConcurrencyAuto, MaxConcurrency: 64},
		{Address: "unix:/run/app.sock", Concurrency: 4, MaxConcurrency: 64},
		{Address: "[::1]:9000", Concurrency: config.ConcurrencyAuto, MaxConcurrency: 12},
	}
	if got := cfg.Upstreams.Servers; !reflect.DeepEqual(got, want) {
		t.Errorf("servers: got %+v, want %+v", got, want)
	}
	if got, want := cfg.Upstreams.HealthCheck, (config.HealthCheck{Interval: 2 * time.Second, Timeout: time.Second, Fails: 3, Passes: 1}); got != want {
		t.Errorf("healthCheck defaults: got %+v, want %+v", got, want)
	}
}

func TestRoutes(t *testing.T) {
	cfg := mustParse(t, `
routes:
  - match: {method: POST, pathPrefix: /api/, header: "X-Batch"}
    priority: sheddable
    cost: 3
    timeout: 2s
  - match: {header: "X-Prefetch: 1"}
    fallback: {body: "<html></html>"}
  - priority: critical-plus
`)
	want := []config.Route{
		{Match: config.Match{Method: "POST", PathPrefix: "/api/", Header: "X-Batch"}, Priority: "sheddable", Cost: 3, Timeout: 2 * time.Second},
		{Match: config.Match{Header: "X-Prefetch: 1"}, Priority: "critical", Cost: 1,
			Fallback: &config.Fallback{Status: 200, ContentType: "text/html; charset=utf-8", Body: "<html></html>"}},
		{Priority: "critical-plus", Cost: 1},
	}
	if got := cfg.Routes; !reflect.DeepEqual(got, want) {
		t.Errorf("routes:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestTrustedPeers(t *testing.T) {
	cfg := mustParse(t, "server:\n  trustedPeers: [10.1.2.3/8, 192.168.0.7, \"::1\", \"fd00::/8\"]\n")
	want := []netip.Prefix{
		netip.MustParsePrefix("10.0.0.0/8"),
		netip.MustParsePrefix("192.168.0.7/32"),
		netip.MustParsePrefix("::1/128"),
		netip.MustParsePrefix("fd00::/8"),
	}
	if got := cfg.Server.TrustedPeers; !reflect.DeepEqual(got, want) {
		t.Errorf("trustedPeers: got %v, want %v", got, want)
	}
}

func TestMergeKeysAndAliases(t *testing.T) {
	cfg := mustParse(t, `
routes:
  - &base
    match: {pathPrefix: /a}
    timeout: 1s
    cost: 3
  - <<: *base
    match: {pathPrefix: /b}
    cost: 2
  - <<: [{cost: 5, priority: sheddable}, *base]
`)
	want := []config.Route{
		{Match: config.Match{PathPrefix: "/a"}, Priority: "critical", Cost: 3, Timeout: time.Second},
		// The mapping's own keys override the merged ones.
		{Match: config.Match{PathPrefix: "/b"}, Priority: "critical", Cost: 2, Timeout: time.Second},
		// In a list of merged mappings, the earlier one wins.
		{Match: config.Match{PathPrefix: "/a"}, Priority: "sheddable", Cost: 5, Timeout: time.Second},
	}
	if got := cfg.Routes; !reflect.DeepEqual(got, want) {
		t.Errorf("routes:\ngot  %+v\nwant %+v", got, want)
	}
}

func TestAliasBombIsBounded(t *testing.T) {
	// Each merge level doubles the one below: 2^40 pairs if expanded.
	var b strings.Builder
	b.WriteString("x0: &m0 {a: 1}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&b, "x%d: &m%d {<<: [*m%d, *m%d]}\n", i, i, i-1, i-1)
	}
	b.WriteString("tenants:\n  weights:\n    <<: *m40\n")
	_, err := config.Parse("bomb.yaml", []byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "too many YAML nodes") {
		t.Fatalf("got %v, want a too-many-nodes error", err)
	}
}

// TestAccepted lists files that look suspicious but are right.
func TestAccepted(t *testing.T) {
	for _, tc := range []struct{ name, src string }{
		// In Go the idle wait and the header read are sequential phases
		// (docs/configuration.md): Node.js's headers > keep-alive rule does
		// not apply.
		{"headersTimeout below keepAliveTimeout", "server:\n  keepAliveTimeout: 65s\n  headersTimeout: 10s\n"},
		{"requestTimeout below headersTimeout", "server:\n  headersTimeout: 66s\n  requestTimeout: 5s\n"},
		{"timeouts off", "server:\n  keepAliveTimeout: 0\n  headersTimeout: 0\n  requestTimeout: 0\nproxy:\n  timeout: 0\n"},
		{"admin off", "admin:\n  listen: \"off\"\n"},
		{"admin public when written", "admin:\n  listen: 0.0.0.0:9090\n"},
		{"listen on a free port", "server:\n  listen: 127.0.0.1:0\n"},
		{"listen on IPv6", "server:\n  listen: \"[::1]:3000\"\n"},
		{"listen by host name", "server:\n  listen: localhost:3000\n"},
		{"ceiling below floor with backpressure off", "server:\n  maxConcurrentRequests: 2\n  backpressure: {enabled: false, minLimit: 5}\n"},
		{"warm-up path defaults to /", "workers:\n  command: w\n  warmupRequests: 3\n"},
		{"tenant keys", "tenants:\n  key: \"header:X-Tenant\"\n"},
		{"tenant cookie", "tenants:\n  key: \"cookie:sid\"\n"},
		{"tenant client IP", "tenants:\n  key: clientIP\n  weights: {\"10.0.0.1\": 2.5}\n"},
		{"upstream by host name", "upstreams:\n  servers: [\"app.internal:8080\"]\n"},
		{"fallback without body", "routes:\n  - fallback: {status: 503}\n"},
		{"custom method", "routes:\n  - match: {method: PROPFIND, header: \"X-A:\"}\n"},
		{"no queue", "server:\n  backpressure: {queueSize: 0, queueTimeout: 0}\n"},
		{"strict priority", "overload:\n  priorityMinShare: 0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustParse(t, tc.src)
		})
	}
}
