package eval

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
)

var testWorkers = []string{"127.0.0.1:4001", "127.0.0.1:4002"}

func TestSluiceConfigIsValidAndUntuned(t *testing.T) {
	b, err := SluiceConfig{Listen: "127.0.0.1:3999", Admin: "127.0.0.1:3998", Workers: testWorkers, Concurrency: 1}.Render()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("sluice.yaml", b)
	if err != nil {
		t.Fatalf("the suite's sluice.yaml does not validate: %v\n%s", err, b)
	}
	if cfg.Upstreams == nil || len(cfg.Upstreams.Servers) != len(testWorkers) {
		t.Fatalf("got upstreams %+v, want the %d workers", cfg.Upstreams, len(testWorkers))
	}
	for i, s := range cfg.Upstreams.Servers {
		if s.Address != testWorkers[i] || s.Concurrency != 1 {
			t.Errorf("upstream %d: got %s concurrency %d, want %s concurrency 1", i, s.Address, s.Concurrency, testWorkers[i])
		}
	}
	if cfg.Server.Listen != "127.0.0.1:3999" || cfg.Admin.Listen != "127.0.0.1:3998" {
		t.Errorf("got listen %q admin %q, want 127.0.0.1:3999 and 127.0.0.1:3998", cfg.Server.Listen, cfg.Admin.Listen)
	}
	if cfg.Tenants.Key != "header:X-Tenant" {
		t.Errorf("got tenants.key %q, want header:X-Tenant", cfg.Tenants.Key)
	}
	if len(cfg.Server.TrustedPeers) != 1 || cfg.Server.TrustedPeers[0].String() != "127.0.0.1/32" {
		t.Errorf("got trustedPeers %v, want [127.0.0.1/32]", cfg.Server.TrustedPeers)
	}
	// Everything else is the built-in default: the suite does not tune
	// sluice to its scenarios.
	def := config.Default()
	if cfg.Server.Backpressure != def.Server.Backpressure || cfg.Overload.CoDel != def.Overload.CoDel ||
		cfg.Overload.PriorityMinShare != def.Overload.PriorityMinShare || cfg.Proxy != def.Proxy || len(cfg.Routes) != 0 {
		t.Errorf("the suite's sluice.yaml departs from the defaults beyond listen, admin, upstreams, trustedPeers and tenants.key:\n%s", b)
	}
}

func TestHAProxyConfig(t *testing.T) {
	b, err := HAProxyConfig{Listen: "127.0.0.1:3997", Workers: testWorkers, QueueTimeout: 500 * time.Millisecond}.Render()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"bind 127.0.0.1:3997",
		"balance leastconn",
		"option abortonclose",
		"timeout queue 500ms",
		"server w0 127.0.0.1:4001 maxconn 1",
		"server w1 127.0.0.1:4002 maxconn 1",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("haproxy.cfg lacks %q:\n%s", want, s)
		}
	}
	for _, bad := range []time.Duration{0, -time.Second, 1500 * time.Microsecond} {
		if _, err := (HAProxyConfig{Listen: "127.0.0.1:1", Workers: testWorkers, QueueTimeout: bad}).Render(); err == nil {
			t.Errorf("queue timeout %v: got no error, want one", bad)
		}
	}
	checkWithTool(t, "haproxy", b, "haproxy.cfg", func(path string) []string { return []string{"-c", "-f", path} })
}

func TestNginxConfig(t *testing.T) {
	dir := t.TempDir()
	b, err := NginxConfig{Listen: "127.0.0.1:3996", Upstream: "127.0.0.1:3997", Dir: dir}.Render()
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		"listen 127.0.0.1:3996",
		"server 127.0.0.1:3997;",
		"proxy_request_buffering on;",
		"proxy_buffering on;",
		"location = /ping",
		"daemon off;",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("nginx.conf lacks %q:\n%s", want, s)
		}
	}
	checkWithTool(t, "nginx", b, "nginx.conf", func(path string) []string { return []string{"-t", "-q", "-p", dir, "-c", path} })
}

// checkWithTool asks the real tool, when installed, whether it accepts
// the configuration.
func checkWithTool(t *testing.T, tool string, cfg []byte, name string, args func(path string) []string) {
	t.Helper()
	bin, err := exec.LookPath(tool)
	if err != nil {
		for _, p := range []string{"/usr/sbin/" + tool} {
			if _, serr := os.Stat(p); serr == nil {
				bin, err = p, nil
			}
		}
	}
	if err != nil {
		t.Logf("%s not installed: configuration not checked by it", tool)
		return
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, args(path)...).CombinedOutput(); err != nil {
		t.Errorf("%s rejects the configuration: %v\n%s", tool, err, out)
	}
}

func TestSluiceConfigDiagnosticVariant(t *testing.T) {
	b, err := SluiceConfig{Listen: "127.0.0.1:3999", Admin: "off", Workers: testWorkers,
		Extra: "overload:\n  codel:\n    enabled: false\n"}.Render()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse("sluice.yaml", b)
	if err != nil {
		t.Fatalf("the variant does not validate: %v\n%s", err, b)
	}
	if cfg.Overload.CoDel.Enabled {
		t.Errorf("got CoDel enabled, want the variant's one change applied:\n%s", b)
	}
	if cfg.Upstreams == nil || len(cfg.Upstreams.Servers) != len(testWorkers) || cfg.Tenants.Key != "header:X-Tenant" {
		t.Errorf("the variant lost the suite's settings:\n%s", b)
	}
}
