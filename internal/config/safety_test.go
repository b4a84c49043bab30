package config_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// A value that turns a safety off is accepted, with a warning naming the
// key at its line; the safe defaults, written out, are quiet.
func TestSafetyWarnings(t *testing.T) {
	const workers = "workers:\n  command: node w.js\n"
	for _, tt := range []struct {
		name string
		src  string
		want []string // "line path", in file order
	}{
		{"server timeouts off", "server:\n  keepAliveTimeout: 0\n  headersTimeout: 0\n  requestTimeout: 0\n  sendTimeout: 0\n",
			[]string{"2 server.keepAliveTimeout", "3 server.headersTimeout", "4 server.requestTimeout", "5 server.sendTimeout"}},
		{"headersTimeout 0 is capped by requestTimeout", "server:\n  headersTimeout: 0\n", nil},
		{"unlimited connections", "server:\n  maxConnections: 0\n", []string{"2 server.maxConnections"}},
		{"no limit at all in library mode", "server:\n  maxConcurrentRequests: 0\n  backpressure: {enabled: false}\n", []string{"2 server.maxConcurrentRequests"}},
		{"workers bound what backpressure does not", "server:\n  maxConcurrentRequests: 0\n  backpressure: {enabled: false}\n" + workers, nil},
		{"unbounded wait", "server:\n  backpressure: {queueTimeout: 0}\noverload:\n  codel: {enabled: false}\n", []string{"2 server.backpressure.queueTimeout"}},
		{"CoDel bounds the wait", "server:\n  backpressure: {queueTimeout: 0}\n", nil},
		{"proxy without bounds", "proxy:\n  timeout: 0\n  maxBodyBytes: 0\n" + workers, []string{"2 proxy.timeout", "3 proxy.maxBodyBytes"}},
		{"admin public with pprof", "admin:\n  listen: 0.0.0.0:9090\n  pprof: true\n", []string{"2 admin.listen"}},
		{"admin on every interface with pprof", "admin:\n  listen: \":9090\"\n  pprof: true\n", []string{"2 admin.listen"}},
		{"admin public without pprof", "admin:\n  listen: 0.0.0.0:9090\n", nil},
		{"admin on localhost", "admin:\n  listen: localhost:9999\n", nil},
		{"admin any host", "admin:\n  allowedHosts: [ops.example, \"*\"]\n", []string{"2 admin.allowedHosts"}},
		{"defaults written out", string(config.DefaultYAML()), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, msgs := warnings(t, tt.src, config.Overrides{})
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got warnings %q, want %q", got, tt.want)
			}
			for path, msg := range msgs {
				if !strings.Contains(msg, "disables a safety") {
					t.Errorf("%s: got %q, want it to say it disables a safety", path, msg)
				}
			}
		})
	}
}

// A key with no effect is reported once, as having no effect, even when
// its value would be unsafe where it acted.
func TestSafetyWarningOncePerKey(t *testing.T) {
	got, msgs := warnings(t, "proxy:\n  maxBodyBytes: 0\n", config.Overrides{})
	if !slices.Equal(got, []string{"2 proxy.maxBodyBytes"}) || !strings.Contains(msgs["proxy.maxBodyBytes"], "no effect") {
		t.Errorf("got %q %q, want one no-effect warning", got, msgs)
	}
}

// Unsafe tells the two kinds of warning apart, for the log at start.
func TestErrorUnsafe(t *testing.T) {
	l, err := config.ParseWith("s.yaml", []byte("server:\n  maxConnections: 0\nproxy:\n  timeout: 5s\n"), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, w := range l.Warnings {
		got[w.Path] = w.Unsafe()
	}
	if want := map[string]bool{"server.maxConnections": true, "proxy.timeout": false}; !maps.Equal(got, want) {
		t.Errorf("got Unsafe by key %v, want %v", got, want)
	}
}
