package config_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// checkOne asserts that err holds exactly one problem, at line, for path,
// whose message contains msg.
func checkOne(t *testing.T, err error, line int, path, msg string) {
	t.Helper()
	list := config.List(err)
	if len(list) != 1 {
		t.Fatalf("got %d errors (%v), want 1 at line %d for %s", len(list), err, line, path)
	}
	e := list[0]
	if e.Line != line || e.Path != path || !strings.Contains(e.Msg, msg) {
		t.Errorf("got %d %s %q, want %d %s %q", e.Line, e.Path, e.Msg, line, path, msg)
	}
}

func TestErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		src  string
		line int
		path string
		msg  string
	}{
		// Unknown keys, with the nearest known key suggested.
		{"unknown key", "server:\n  keepAliveTimout: 5s\n", 2, "server.keepAliveTimout", "unknown key (did you mean keepAliveTimeout?)"},
		{"unknown section", "sever:\n  listen: \":1\"\n", 1, "sever", "did you mean server?"},
		{"snake case key", "server:\n  keep_alive_timeout: 5s\n", 2, "server.keep_alive_timeout", "did you mean keepAliveTimeout?"},
		{"wrong case key", "server:\n  backpressure:\n    QueueSize: 5\n", 3, "server.backpressure.QueueSize", "did you mean queueSize?"},
		{"unknown key, nothing near", "proxy:\n  zzzzzz: 1\n", 2, "proxy.zzzzzz", "unknown key"},
		{"unknown route key", "routes:\n  - match: {path: /a}\n", 2, "routes[0].match.path", "did you mean pathPrefix?"},

		// Wrong types.
		{"number for string", "server:\n  healthPath: 3000\n", 2, "server.healthPath", "want a string, got 3000 (quote it"},
		{"port for listen", "server:\n  listen: 3300\n", 2, "server.listen", `want a string, got 3300 (write ":3300": port 3300 on every interface)`},
		{"port for admin listen", "admin:\n  listen: 9091\n", 2, "admin.listen", `want a string, got 9091 (write "127.0.0.1:9091": port 9091 on the loopback)`},
		{"scalar for section", "server:\n  backpressure: true\n", 2, "server.backpressure", "want a mapping, got true"},
		{"string for bool", "server:\n  h2c: \"yes\"\n", 2, "server.h2c", "want true or false"},
		{"string for int", "server:\n  backpressure:\n    minLimit: \"100\"\n", 3, "server.backpressure.minLimit", "want a whole number"},
		{"float for int", "tenants:\n  maxTracked: 1.5\n", 2, "tenants.maxTracked", "want a whole number"},
		{"mapping for list", "routes: {a: 1}\n", 1, "routes", "want a list, got a mapping"},
		{"list for number", "overload:\n  priorityMinShare: [1]\n", 2, "overload.priorityMinShare", "want a number"},
		{"list for duration", "proxy:\n  timeout: [1]\n", 2, "proxy.timeout", "want a duration"},
		{"bool for size", "proxy:\n  maxBodyBytes: true\n", 2, "proxy.maxBodyBytes", "want a size"},
		{"bad duration", "server:\n  headersTimeout: abc\n", 2, "server.headersTimeout", `"abc" is not a duration`},
		{"bad size unit", "server:\n  maxHeaderBytes: 10K\n", 2, "server.maxHeaderBytes", `"10K" is not a size`},
		{"maxHeaderBytes zero", "server:\n  maxHeaderBytes: 0\n", 2, "server.maxHeaderBytes", "must be greater than 0 (got 0)"},
		{"fractional bytes", "server:\n  maxHeaderBytes: 1.1B\n", 2, "server.maxHeaderBytes", "not a whole number of bytes"},
		{"key not a string", "? [a]\n: 1\n", 1, "", "a key must be a string"},
		{"bad merge", "server:\n  <<: 3\n", 2, "server", "a merge (<<) takes a mapping"},
		{"env as list", "workers:\n  command: w\n  env: [A]\n", 3, "workers.env", "want a mapping"},
		{"upstream as number", "upstreams:\n  servers: [8080]\n", 2, "upstreams.servers[0]", "want an address or a mapping"},

		// Negative durations and sizes.
		{"negative duration", "server:\n  keepAliveTimeout: -1s\n", 2, "server.keepAliveTimeout", "-1s must not be negative"},
		{"negative milliseconds", "proxy:\n  timeout: -5\n", 2, "proxy.timeout", "must not be negative"},
		{"negative size", "proxy:\n  maxBodyBytes: -1\n", 2, "proxy.maxBodyBytes", "-1 must not be negative"},
		{"negative size string", "proxy:\n  bufferResponseBytes: -1KiB\n", 2, "proxy.bufferResponseBytes", "must not be negative"},
		{"negative route timeout", "routes:\n  - timeout: -1s\n", 2, "routes[0].timeout", "must not be negative"},

		// Backpressure.
		{"minLimit above maxLimit", "server:\n  backpressure:\n    minLimit: 50\n    maxLimit: 10\n", 3, "server.backpressure.minLimit", "50 is greater than maxLimit (10)"},
		{"maxLimit below default minLimit", "server:\n  backpressure:\n    maxLimit: 0\n", 3, "server.backpressure.maxLimit", "0 is less than minLimit (1)"},
		{"minLimit zero", "server:\n  backpressure:\n    minLimit: 0\n", 3, "server.backpressure.minLimit", "0 must be at least 1"},
		{"initialLimit above max", "server:\n  backpressure:\n    initialLimit: 2000\n", 3, "server.backpressure.initialLimit", "2000 is outside [minLimit, maxLimit] = [1, 1000]"},
		{"initialLimit below min", "server:\n  backpressure:\n    minLimit: 5\n    initialLimit: 2\n", 4, "server.backpressure.initialLimit", "outside"},
		{"saturationMax zero", "server:\n  backpressure:\n    saturationMax: 0\n", 3, "server.backpressure.saturationMax", "0 is outside (0, 1]"},
		{"eluMax above one", "server:\n  backpressure:\n    eluMax: 1.5\n", 3, "server.backpressure.saturationMax", "1.5 is outside (0, 1]"},
		{"eluMax and saturationMax", "server:\n  backpressure:\n    eluMax: 0.9\n    saturationMax: 0.9\n", 4, "server.backpressure.saturationMax", "saturationMax and eluMax (line 3) are the same setting"},
		{"smoothingFactor zero", "server:\n  backpressure:\n    smoothingFactor: 0\n", 3, "server.backpressure.smoothingFactor", "outside (0, 1]"},
		{"smoothingFactor NaN", "server:\n  backpressure:\n    smoothingFactor: .nan\n", 3, "server.backpressure.smoothingFactor", "NaN is outside (0, 1]"},
		{"smoothingFactor above one", "server:\n  backpressure:\n    smoothingFactor: 1.01\n", 3, "server.backpressure.smoothingFactor", "outside (0, 1]"},
		{"queueSize negative", "server:\n  backpressure:\n    queueSize: -1\n", 3, "server.backpressure.queueSize", "-1 is not a whole number (0: no queue) or \"auto\""},
		{"sampleWindow zero", "server:\n  backpressure:\n    sampleWindow: 0\n", 3, "server.backpressure.sampleWindow", "must be greater than 0"},
		{"unknown algorithm", "server:\n  backpressure:\n    algorithm: vegas\n", 3, "server.backpressure.algorithm", `"vegas" is not an algorithm`},
		{"ceiling below floor", "server:\n  maxConcurrentRequests: 2\n  backpressure:\n    minLimit: 5\n", 2, "server.maxConcurrentRequests", "less than backpressure.minLimit (5)"},

		// Server.
		{"tls cert only", "server:\n  tls:\n    certFile: a.pem\n", 3, "server.tls.certFile", "keyFile is not"},
		{"tls key only", "server:\n  tls: {keyFile: k.pem}\n", 2, "server.tls.keyFile", "certFile is not"},
		{"h2c with tls", "server:\n  tls: {certFile: c, keyFile: k}\n  h2c: true\n", 3, "server.h2c", "h2c is HTTP/2 without TLS"},
		{"bad listen", "server:\n  listen: \"3000\"\n", 2, "server.listen", "not host:port"},
		{"bad listen port", "server:\n  listen: \":http\"\n", 2, "server.listen", "is not a number"},
		{"bad CIDR", "server:\n  trustedPeers: [10.0.0.0/8, 10.0.0.0/33]\n", 2, "server.trustedPeers[1]", `"10.0.0.0/33" is not a CIDR or IP address`},
		{"bad peer", "server:\n  trustedPeers:\n    - 10.0.0.0/8\n    - localhost\n", 4, "server.trustedPeers[1]", "not a CIDR or IP address"},
		{"shutdownTimeout zero", "server:\n  shutdownTimeout: 0\n", 2, "server.shutdownTimeout", "must be greater than 0"},
		{"drainDelay too long", "server:\n  drainDelay: 30s\n", 2, "server.drainDelay", "30s is not shorter than shutdownTimeout (25s)"},
		{"health path relative", "server:\n  healthPath: health\n", 2, "server.healthPath", "must start with /"},
		{"ready path empty", "server:\n  readyPath: \"\"\n", 2, "server.readyPath", "must not be empty"},
		{"ready is health", "server:\n  readyPath: /__sluice/health\n", 2, "server.readyPath", "also healthPath"},

		// Admin.
		{"admin listen no port", "admin:\n  listen: localhost\n", 2, "admin.listen", `"localhost" is not host:port (or "off" to disable)`},
		{"admin listen bad port", "admin:\n  listen: \":99999\"\n", 2, "admin.listen", "is not a number from 0 to 65535"},
		{"admin listen bad host", "admin:\n  listen: \"a b:80\"\n", 2, "admin.listen", "not an IP address or host name"},
		{"admin listen empty", "admin:\n  listen: \"\"\n", 2, "admin.listen", `write "off"`},

		// Workers and upstreams.
		{"workers and upstreams", "workers:\n  command: node w.js\nupstreams:\n  servers: [\"127.0.0.1:80\"]\n", 3, "upstreams", "exclusive"},
		{"empty command string", "workers:\n  command: \"\"\n", 2, "workers.command", "must name the program"},
		{"empty command list", "workers:\n  command: []\n", 2, "workers.command", "must name the program"},
		{"no command", "workers:\n  count: 2\n", 1, "workers.command", "must name the program"},
		{"concurrency zero", "workers:\n  command: w\n  concurrency: 0\n", 3, "workers.concurrency", "0 is not a positive whole number or \"auto\""},
		{"concurrency a word", "workers:\n  command: w\n  concurrency: many\n", 3, "workers.concurrency", "\"many\" is not a positive whole number or \"auto\""},
		{"maxConcurrency zero", "workers:\n  command: w\n  maxConcurrency: 0\n", 3, "workers.maxConcurrency", "0 must be at least 1"},
		{"maxConcurrency with a fixed concurrency", "workers:\n  command: w\n  concurrency: 4\n  maxConcurrency: 16\n", 4, "workers.maxConcurrency", "has no effect with a fixed concurrency (4)"},
		{"upstream maxConcurrency with a fixed concurrency", "upstreams:\n  servers:\n    - address: 127.0.0.1:1\n      concurrency: 2\n      maxConcurrency: 8\n", 5, "upstreams.servers[0].maxConcurrency", "has no effect with a fixed concurrency (2)"},
		{"env name with =", "workers:\n  command: w\n  env: {\"A=B\": x}\n", 3, "workers.env.A=B", "not an environment variable name"},
		{"bad address mode", "workers:\n  command: w\n  address: tcp\n", 3, "workers.address", `"tcp" is not an address mode`},
		{"bad roll mode", "workers:\n  command: w\n  roll: blue-green\n", 3, "workers.roll", `"blue-green" is not a rolling restart mode`},
		{"relative warmup path", "workers:\n  command: w\n  warmupRequests: 5\n  warmupPath: home\n", 4, "workers.warmupPath", "must start with /"},
		{"negative slow start", "workers:\n  command: w\n  slowStart: -5s\n", 3, "workers.slowStart", "is negative"},
		{"backoff max below initial", "workers:\n  command: w\n  restartBackoff: {initial: 2s, max: 1s}\n", 3, "workers.restartBackoff.max", "1s is less than initial (2s)"},
		{"crash window zero", "workers:\n  command: w\n  crashLoop: {window: 0}\n", 3, "workers.crashLoop.window", "must be greater than 0"},
		{"poison after zero", "workers:\n  command: w\n  poison: {after: 0}\n", 3, "workers.poison.after", "must be at least 1"},
		{"poison quarantine above its max", "workers:\n  command: w\n  poison: {quarantine: 2h}\n", 3, "workers.poison.maxQuarantine", "less than quarantine"},
		{"no upstream servers", "upstreams:\n  healthCheck: {interval: 1s}\n", 1, "upstreams.servers", "at least one server"},
		{"upstream without port", "upstreams:\n  servers: [localhost]\n", 2, "upstreams.servers[0].address", "not host:port"},
		{"upstream port zero", "upstreams:\n  servers:\n    - address: \"127.0.0.1:0\"\n", 3, "upstreams.servers[0].address", "port 0 cannot be dialled"},
		{"upstream no host", "upstreams:\n  servers: [\":80\"]\n", 2, "upstreams.servers[0].address", "has no host"},
		{"upstream unix empty", "upstreams:\n  servers: [\"unix:\"]\n", 2, "upstreams.servers[0].address", "no socket path"},
		{"health fails zero", "upstreams:\n  servers: [\"a:1\"]\n  healthCheck: {fails: 0}\n", 3, "upstreams.healthCheck.fails", "at least 1"},

		// Proxy, overload, tenants.
		{"ping is health", "proxy:\n  pingPath: /__sluice/health\n", 2, "proxy.pingPath", "also server.healthPath"},
		{"priorityMinShare one", "overload:\n  priorityMinShare: 1\n", 2, "overload.priorityMinShare", "1 is outside [0, 1)"},
		{"codel target not below interval", "overload:\n  codel: {target: 100ms, interval: 100ms}\n", 2, "overload.codel.target", "not shorter than interval"},
		{"tenant key bare header", "tenants:\n  key: header\n", 2, "tenants.key", `"header" is not a tenant key`},
		{"tenant key empty name", "tenants:\n  key: \"cookie:\"\n", 2, "tenants.key", "not a tenant key"},
		{"tenant key bad name", "tenants:\n  key: \"header:X Tenant\"\n", 2, "tenants.key", "not a tenant key"},
		{"tenant key case", "tenants:\n  key: clientip\n", 2, "tenants.key", "not a tenant key"},
		{"tenant weight zero", "tenants:\n  weights: {acme: 0}\n", 2, "tenants.weights.acme", "must be a positive number"},
		{"tenant weight negative", "tenants:\n  weights:\n    acme: -2\n", 3, "tenants.weights.acme", "must be a positive number"},
		{"maxTracked zero", "tenants:\n  maxTracked: 0\n", 2, "tenants.maxTracked", "at least 1"},

		// Routes.
		{"bad priority", "routes:\n  - priority: urgent\n", 2, "routes[0].priority", `"urgent" is not a priority`},
		{"priority case", "routes:\n  - match: {pathPrefix: /}\n  - priority: Critical\n", 3, "routes[1].priority", "not a priority"},
		{"lower-case method", "routes:\n  - match: {method: get}\n", 2, "routes[0].match.method", "not an upper-case HTTP method"},
		{"method with space", "routes:\n  - match: {method: \"GET /\"}\n", 2, "routes[0].match.method", "not an upper-case HTTP method"},
		{"relative prefix", "routes:\n  - match: {pathPrefix: api}\n", 2, "routes[0].match.pathPrefix", "must start with /"},
		{"bad header name", "routes:\n  - match: {header: \"X Y: z\"}\n", 2, "routes[0].match.header", "not \"Name: value\" or \"Name\""},
		{"header without name", "routes:\n  - match: {header: \": z\"}\n", 2, "routes[0].match.header", "not \"Name: value\""},
		{"cost zero", "routes:\n  - cost: 0\n", 2, "routes[0].cost", "at least 1"},
		{"fallback body and file", "routes:\n  - fallback:\n      body: x\n      file: shell.html\n", 4, "routes[0].fallback.file", "body and file are both set"},
		{"fallback status", "routes:\n  - fallback: {status: 99}\n", 2, "routes[0].fallback.status", "99 is not an HTTP status"},
		{"fallback props", "routes:\n  - fallback: {props: \"cookie:p\"}\n", 2, "routes[0].fallback.props", `"cookie:p" is not "query:NAME" or "header:NAME"`},
		{"max upgrades", "proxy: {maxUpgrades: 0}\n", 1, "proxy.maxUpgrades", "at least 1"},
		{"max header fields", "proxy: {maxHeaderFields: 0}\n", 1, "proxy.maxHeaderFields", "at least 1"},
		{"max streams", "proxy: {maxStreams: 0}\n", 1, "proxy.maxStreams", "at least 1"},
		{"negative stream idle timeout", "routes: [{streamIdleTimeout: -1s}]\n", 1, "routes[0].streamIdleTimeout", "negative"},

		// The file as a whole.
		{"duplicate key", "server:\n  listen: \":1\"\n  listen: \":2\"\n", 3, "server.listen", "duplicate key (first at line 2)"},
		{"duplicate section", "proxy: {}\nproxy: {}\n", 2, "proxy", "duplicate key (first at line 1)"},
		{"duplicate env", "workers:\n  command: w\n  env: {A: 1, A: 2}\n", 3, "workers.env.A", "duplicate key"},
		{"syntax error", "server:\n  listen: \":1\"\n bad\n", 2, "", "invalid YAML"}, // the line the YAML parser names
		{"tab indent", "server:\n\tlisten: x\n", 2, "", "invalid YAML"},
		{"two documents", "server: {}\n---\nadmin: {}\n", 2, "", "more than one YAML document"},
		{"top-level list", "- server\n", 1, "", "want a mapping of sections"},
		{"top-level scalar", "hello\n", 1, "", "want a mapping of sections"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("sluice.yaml", []byte(tc.src))
			checkOne(t, err, tc.line, tc.path, tc.msg)
		})
	}
}

func TestErrorFormat(t *testing.T) {
	src := "# comment\nserver:\n  backpressure:\n    minLimit: 50\n    maxLimit: 10\n"
	_, err := config.Parse("sluice.yaml", []byte(src))
	want := "sluice.yaml:4: server.backpressure.minLimit: 50 is greater than maxLimit (10)"
	if err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
	var e *config.Error
	if !errors.As(err, &e) || e.Line != 4 {
		t.Errorf("errors.As(*Error): got %+v, want the problem at line 4", e)
	}
}

func TestEveryErrorReported(t *testing.T) {
	src := `server:
  listen: 3000
  keepAliveTimout: 5s
  backpressure:
    minLimit: 50
    maxLimit: 10
workers:
  command: ""
  count: 0
routes:
  - priority: urgent
tenants:
  key: ip
`
	_, err := config.Parse("sluice.yaml", []byte(src))
	want := []string{
		"sluice.yaml:2: server.listen: ",
		"sluice.yaml:3: server.keepAliveTimout: ",
		"sluice.yaml:5: server.backpressure.minLimit: ",
		"sluice.yaml:8: workers.command: ",
		"sluice.yaml:9: workers.count: ",
		"sluice.yaml:11: routes[0].priority: ",
		"sluice.yaml:13: tenants.key: ",
	}
	list := config.List(err)
	if len(list) != len(want) {
		t.Fatalf("got %d errors:\n%v\nwant %d", len(list), err, len(want))
	}
	for i, e := range list {
		if !strings.HasPrefix(e.Error(), want[i]) {
			t.Errorf("error %d: got %q, want it to start %q", i, e.Error(), want[i])
		}
	}
}

func TestValidateGoBuilt(t *testing.T) {
	c := config.Default()
	c.Server.Backpressure.MinLimit = 50
	c.Server.Backpressure.MaxLimit = 10
	c.Workers = &config.Workers{Count: -1, Concurrency: -1}
	c.Upstreams = &config.Upstreams{Servers: []config.Upstream{{Address: "127.0.0.1:1"}}}
	err := c.Validate()
	list := config.List(err)
	if len(list) == 0 {
		t.Fatal("got nil, want errors")
	}
	if got, want := list[0].Error(), "config: server.backpressure.minLimit: 50 is greater than maxLimit (10)"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	var paths []string
	for _, e := range list {
		paths = append(paths, e.Path)
	}
	for _, p := range []string{"workers.command", "workers.count", "workers.concurrency", "workers.address", "workers.startTimeout", "upstreams.servers[0].maxConcurrency"} {
		if !strings.Contains(strings.Join(paths, " "), p) {
			t.Errorf("got errors for %v, want one for %s", paths, p)
		}
	}
}

func TestListOfOtherErrors(t *testing.T) {
	if got := config.List(errors.New("boom")); got != nil {
		t.Errorf("List(plain error): got %v, want nil", got)
	}
	e := &config.Error{Path: "a"}
	if got := config.List(e); len(got) != 1 || got[0] != e {
		t.Errorf("List(*Error): got %v, want [e]", got)
	}
}
