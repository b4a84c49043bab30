package app

import (
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/poison"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/server"
)

// A key the file leaves out configures what its package does with no
// option set: the defaults sluice.yaml shows (defaults.yaml, which parses
// to config.Default, internal/config's TestDefaultYAMLParsesToDefault) are
// the packages' Default* constants. A package's default changed without
// the file's, or the other way round, fails here.
func TestDefaultsAgree(t *testing.T) {
	workers, err := config.Parse("t", []byte("workers: {command: w}\n"))
	if err != nil {
		t.Fatal(err)
	}
	upstreams, err := config.Parse("t", []byte("upstreams: {servers: [127.0.0.1:1]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	s, p, w, h := workers.Server, workers.Proxy, workers.Workers, upstreams.Upstreams.HealthCheck
	for _, tt := range []struct {
		key       string
		got, want any
	}{
		{"server.listen", s.Listen, server.DefaultAddr},
		{"server.keepAliveTimeout", s.KeepAliveTimeout, server.DefaultKeepAliveTimeout},
		{"server.headersTimeout", s.HeadersTimeout, server.DefaultHeadersTimeout},
		{"server.requestTimeout", s.RequestTimeout, server.DefaultRequestTimeout},
		{"server.shutdownTimeout", s.ShutdownTimeout, server.DefaultShutdownTimeout},
		{"server.drainDelay", s.DrainDelay, server.DefaultDrainDelay},
		{"server.maxHeaderBytes", s.MaxHeaderBytes, int64(server.DefaultMaxHeaderBytes)},
		{"server.maxConnections", s.MaxConnections, server.DefaultMaxConnections},
		{"server.sendTimeout", s.SendTimeout, server.DefaultSendTimeout},
		{"server.healthPath", s.HealthPath, server.DefaultHealthPath},
		{"server.readyPath", s.ReadyPath, server.DefaultReadyPath},
		{"tenants.maxTracked", workers.Tenants.MaxTracked, admission.DefaultMaxTrackedTenants},
		{"proxy.timeout", p.Timeout, proxy.DefaultTimeout},
		{"proxy.maxBodyBytes", p.MaxBodyBytes, int64(proxy.DefaultMaxBodyBytes)},
		{"proxy.maxHeaderFields", p.MaxHeaderFields, proxy.DefaultMaxHeaderFields},
		{"proxy.bufferResponseBytes", p.BufferResponseBytes, int64(proxy.DefaultBufferResponseBytes)},
		{"proxy.maxUpgrades", p.MaxUpgrades, proxy.DefaultMaxUpgrades},
		{"proxy.lookahead", p.Lookahead, proxy.DefaultLookahead},
		{"proxy.streamIdleTimeout", p.StreamIdleTimeout, proxy.DefaultStreamIdleTimeout},
		{"proxy.streamTimeout", p.StreamTimeout, proxy.DefaultStreamTimeout},
		{"proxy.streamHold", p.StreamHold, proxy.DefaultStreamHold},
		{"proxy.maxStreams", p.MaxStreams, proxy.DefaultMaxStreams},
		{"workers.startTimeout", w.StartTimeout, supervisor.DefaultStartTimeout},
		{"workers.restartBackoff.initial", w.RestartBackoff.Initial, supervisor.DefaultBackoffMin},
		{"workers.restartBackoff.max", w.RestartBackoff.Max, supervisor.DefaultBackoffMax},
		{"workers.crashLoop.window", w.CrashLoop.Window, supervisor.DefaultCrashLoopWindow},
		{"workers.crashLoop.exits (per process)", w.CrashLoop.Limit(1), supervisor.DefaultCrashLoopExitsPerWorker},
		{"workers.stopTimeout", w.StopTimeout, supervisor.DefaultStopTimeout},
		{"workers.roll", supervisor.RollMode(w.Roll), supervisor.RollSurge},
		{"workers.poison.after", w.Poison.After, poison.DefaultAfter},
		{"workers.poison.window", w.Poison.Window, poison.DefaultWindow},
		{"workers.poison.quarantine", w.Poison.Quarantine, poison.DefaultQuarantine},
		{"workers.poison.maxQuarantine", w.Poison.MaxQuarantine, poison.DefaultMaxQuarantine},
		{"upstreams.healthCheck.interval", h.Interval, supervisor.DefaultHealthInterval},
		{"upstreams.healthCheck.timeout", h.Timeout, supervisor.DefaultHealthTimeout},
		{"upstreams.healthCheck.fails", h.Fails, supervisor.DefaultHealthFails},
		{"upstreams.healthCheck.passes", h.Passes, supervisor.DefaultHealthPasses},
		{"proxy.lookahead's bound", config.MaxLookahead, proxy.MaxLookahead},
	} {
		if !reflect.DeepEqual(tt.got, tt.want) {
			t.Errorf("%s: the file's default is %v, its package's %v: want one default", tt.key, tt.got, tt.want)
		}
	}
}
