package app

import (
	"net/http/httptest"
	"os"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// workers.concurrency maps onto the supervisor: auto is adaptive up to
// maxConcurrency, a number is the fixed limit.
func TestSupervisorOptionsConcurrency(t *testing.T) {
	for _, tt := range []struct {
		yaml         string
		wantN        int
		wantAdaptive bool
	}{
		{"workers: {command: w}", 64, true},
		{"workers: {command: w, concurrency: auto, maxConcurrency: 12}", 12, true},
		{"workers: {command: w, concurrency: 3}", 3, false},
	} {
		cfg, err := config.Parse("t", []byte(tt.yaml))
		if err != nil {
			t.Fatal(err)
		}
		o := supervisorOptions(cfg.Workers, "", nil, nil)
		if o.Concurrency != tt.wantN || o.Adaptive != tt.wantAdaptive {
			t.Errorf("%s: got concurrency %d adaptive %v, want %d %v", tt.yaml, o.Concurrency, o.Adaptive, tt.wantN, tt.wantAdaptive)
		}
	}
}

// proxy.saturationMax is each adaptive worker's threshold; so is the
// deprecated server.backpressure.saturationMax (eluMax) in front mode, when
// proxy.saturationMax is not written.
func TestProxyOptionsWorkerLimit(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want float64
	}{
		{"workers: {command: w}", 0.98},
		{"proxy: {saturationMax: 0.6}\nworkers: {command: w}", 0.6},
		{"server: {backpressure: {eluMax: 0.7}}\nworkers: {command: w}", 0.7},
		{"server: {backpressure: {saturationMax: 0.7}}\nproxy: {saturationMax: 0.6}\nworkers: {command: w}", 0.6},
	} {
		o := proxyOptionsOf(t, tt.yaml)
		if got := o.WorkerLimit.MaxSaturation; got != tt.want {
			t.Errorf("%q: got WorkerLimit.MaxSaturation %v, want %v", tt.yaml, got, tt.want)
		}
	}
}

// proxy.kernelSaturation: false turns the kernel's measure off; the
// default leaves the proxy's (KernelDemand).
func TestProxyOptionsKernelSaturation(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		off  bool
	}{
		{"workers: {command: w}", false},
		{"proxy: {kernelSaturation: false}\nworkers: {command: w}", true},
	} {
		o := proxyOptionsOf(t, tt.yaml)
		ep := supervisor.Endpoint{Pid: os.Getpid(), Adaptive: true}
		switch off := o.WorkerDemand != nil && o.WorkerDemand(ep) == nil; {
		case off != tt.off:
			t.Errorf("%q: kernel demand off is %v, want %v", tt.yaml, off, tt.off)
		case !tt.off && o.WorkerDemand != nil:
			t.Errorf("%q: WorkerDemand set; want nil, the proxy's default", tt.yaml)
		}
	}
}

// proxy.lookahead maps onto the proxy: the default 1, and 0 for none
// (the proxy's zero would mean its default); both bound it alike.
func TestProxyOptionsLookahead(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want int
	}{
		{"workers: {command: w}", 1},
		{"workers: {command: w}\nproxy: {lookahead: 2}", 2},
		{"workers: {command: w}\nproxy: {lookahead: 0}", -1},
	} {
		o := proxyOptionsOf(t, tt.yaml)
		if o.Lookahead != tt.want {
			t.Errorf("%q: got Lookahead %d, want %d", tt.yaml, o.Lookahead, tt.want)
		}
	}
}

// workers.poison gives the proxy a table of shapes; off, or in front of
// upstreams sluice does not supervise (no deaths reported), none.
func TestProxyOptionsPoison(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want bool
	}{
		{"workers: {command: w}", true},
		{"workers: {command: w, poison: {enabled: false}}", false},
		{"upstreams: {servers: [127.0.0.1:8080]}", false},
	} {
		o := proxyOptionsOf(t, tt.yaml)
		if got := o.Poison != nil; got != tt.want {
			t.Errorf("%s: got a poison table %v, want %v", tt.yaml, got, tt.want)
		}
	}
}

// The proxy's header bounds come from the file: the defaults, and what
// it writes.
func TestProxyOptionsHeaders(t *testing.T) {
	for _, tt := range []struct {
		yaml        string
		fields      int
		underscores bool
	}{
		{"workers: {command: w}\n", 100, false},
		{"workers: {command: w}\nproxy: {maxHeaderFields: 300, underscoresInHeaders: true}\n", 300, true},
	} {
		o := proxyOptionsOf(t, tt.yaml)
		if o.MaxHeaderFields != tt.fields || o.UnderscoresInHeaders != tt.underscores {
			t.Errorf("%q: got MaxHeaderFields %d UnderscoresInHeaders %v, want %d %v", tt.yaml, o.MaxHeaderFields, o.UnderscoresInHeaders, tt.fields, tt.underscores)
		}
	}
}

func TestStaticOptions(t *testing.T) {
	cfg, err := config.Parse("t", []byte(`upstreams:
  servers: ["127.0.0.1:8080", {address: "unix:/run/app.sock", concurrency: 4}, {address: "127.0.0.1:8081", maxConcurrency: 9}]
  healthCheck: {path: /healthz, fails: 2, passes: 3}
`))
	if err != nil {
		t.Fatal(err)
	}
	o := staticOptions(cfg.Upstreams, nil)
	if len(o.Upstreams) != 3 {
		t.Fatalf("got %d upstreams, want 3", len(o.Upstreams))
	}
	if u := o.Upstreams[0]; u.Network != "tcp" || u.Addr != "127.0.0.1:8080" || u.Concurrency != 64 || !u.Adaptive {
		t.Errorf("first upstream: got %+v, want tcp 127.0.0.1:8080, adaptive up to 64", u)
	}
	if u := o.Upstreams[1]; u.Network != "unix" || u.Addr != "/run/app.sock" || u.Concurrency != 4 || u.Adaptive {
		t.Errorf("unix upstream: got %+v, want unix /run/app.sock, fixed concurrency 4", u)
	}
	if u := o.Upstreams[2]; u.Concurrency != 9 || !u.Adaptive {
		t.Errorf("third upstream: got %+v, want adaptive up to 9", u)
	}
	if o.HealthPath != "/healthz" || o.Fails != 2 || o.Passes != 3 {
		t.Errorf("health check: got path %q fails %d passes %d, want /healthz 2 3", o.HealthPath, o.Fails, o.Passes)
	}
}

// A fallback belongs to its route: the first route a request matches
// decides, and a request that changes state gets a fallback only from a
// route that names its method.
func TestRouteFallbacks(t *testing.T) {
	cfg, err := config.Parse("t", []byte(`workers: {command: w}
routes:
  - match: {pathPrefix: /api, header: "X-Beta"}
    priority: sheddable
  - match: {method: POST, pathPrefix: /batch}
    fallback: {body: client-render, status: 200}
  - match: {pathPrefix: /}
    fallback: {body: shell}
`))
	if err != nil {
		t.Fatal(err)
	}
	cls, err := classifier(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rf, err := newRouteFallbacks(cfg, cls, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		method, target, beta, want string
	}{
		{"GET", "/home", "", "shell"},
		{"HEAD", "/home", "", "shell"},
		{"POST", "/home", "", ""},   // a shed POST must not read as done
		{"DELETE", "/home", "", ""}, // nor a DELETE
		{"POST", "/batch", "", "client-render"},
		{"GET", "/api/x", "1", ""}, // its route has none: no other route's
		{"GET", "/api/x", "", "shell"},
	} {
		r := httptest.NewRequest(tt.method, tt.target, nil)
		if tt.beta != "" {
			r.Header.Set("X-Beta", tt.beta)
		}
		got := ""
		if f := rf.choose(r); f != nil {
			got = string(f.Body)
		}
		if got != tt.want {
			t.Errorf("%s %s (X-Beta %q): got fallback %q, want %q", tt.method, tt.target, tt.beta, got, tt.want)
		}
	}
}

// server.procs is taken as it is when set; 0 keeps every usable CPU, in
// either mode.
func TestProcs(t *testing.T) {
	for _, tt := range []struct {
		yaml       string
		cpus, want int
	}{
		{"workers: {command: w}", 8, 8},
		{"upstreams: {servers: [127.0.0.1:1]}", 2, 2},
		{"server: {listen: ':0'}", 4, 4},
		{"server: {procs: 1}\nworkers: {command: w}", 8, 1},
		{"server: {procs: 3}", 8, 3},
	} {
		cfg, err := config.Parse("t", []byte(tt.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		if got := Procs(cfg, tt.cpus); got != tt.want {
			t.Errorf("%q on %d CPUs: Procs = %d, want %d", tt.yaml, tt.cpus, got, tt.want)
		}
	}
}

// A bound the file writes 0 is off in the component it configures, never
// the component's own default (its zero value): every such key goes
// through none. Each case names the key and reads the option it sets.
func TestZeroIsNone(t *testing.T) {
	cfg, err := config.Parse("t", []byte(`server:
  keepAliveTimeout: 0
  headersTimeout: 0
  requestTimeout: 0
  drainDelay: 0
  maxConnections: 0
  sendTimeout: 0
  maxConcurrentRequests: 0
  backpressure: {queueSize: 0, queueTimeout: 0}
workers: {command: w}
proxy:
  timeout: 0
  maxBodyBytes: 0
  bufferResponseBytes: 0
  lookahead: 0
  streamIdleTimeout: 0
  streamTimeout: 0
  streamHold: 0
compression: {minLength: 0}
`))
	if err != nil {
		t.Fatal(err)
	}
	srv := newServer(cfg.Server, nil, nil, nil)
	px, err := proxyOptions(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctrl, err := ControllerOptions(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	cmp := compressOptions(cfg.Compression)
	for _, tt := range []struct {
		key string
		got int64
	}{
		{"server.keepAliveTimeout", int64(srv.KeepAliveTimeout)},
		{"server.headersTimeout", int64(srv.HeadersTimeout)},
		{"server.requestTimeout", int64(srv.RequestTimeout)},
		{"server.drainDelay", int64(srv.DrainDelay)},
		{"server.maxConnections", int64(srv.MaxConnections)},
		{"server.sendTimeout", int64(srv.SendTimeout)},
		{"server.backpressure.queueSize", int64(ctrl.QueueSize)},
		{"server.backpressure.queueTimeout", int64(ctrl.QueueTimeout)},
		{"proxy.timeout", int64(px.Timeout)},
		{"proxy.maxBodyBytes", px.MaxBodyBytes},
		{"proxy.bufferResponseBytes", px.BufferResponseBytes},
		{"proxy.lookahead", int64(px.Lookahead)},
		{"proxy.streamIdleTimeout", int64(px.StreamIdleTimeout)},
		{"proxy.streamTimeout", int64(px.StreamTimeout)},
		{"proxy.streamHold", int64(px.StreamHold)},
		{"compression.minLength", cmp.MinLength},
	} {
		if tt.got >= 0 {
			t.Errorf("%s: 0 in the file maps to %d, want a negative value (none), not the component's default", tt.key, tt.got)
		}
	}
	if got := ctrl.Limit.(*limit.Fixed).Limit(); got != admission.MaxLimit {
		t.Errorf("server.maxConcurrentRequests: 0 in the file is a cap of %d, want none (admission.MaxLimit)", got)
	}
}

// proxyOptionsOf is the proxy's options for a config file's text.
func proxyOptionsOf(t *testing.T, yaml string) proxy.Options {
	t.Helper()
	cfg, err := config.Parse("t", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	o, err := proxyOptions(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return o
}
