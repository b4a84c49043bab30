package eval

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"text/template"
	"time"
)

//go:embed configs/*.tmpl
var configFS embed.FS

// NginxConfig is nginx in front of HAProxy: request and response
// buffering, /ping answered by nginx, keep-alive to HAProxy.
type NginxConfig struct {
	Listen   string // host:port nginx listens on
	Upstream string // HAProxy's host:port
	Dir      string // pid file, error log and temporary files
}

// HAProxyConfig is HAProxy as the queue: leastconn over workers of maxconn
// MaxConn, timeout queue QueueTimeout, abortonclose.
type HAProxyConfig struct {
	Listen       string
	Workers      []string
	QueueTimeout time.Duration
	// MaxConn is each worker's maxconn; 0 means 1, as Airbnb ran
	// single-threaded renderers.
	MaxConn int
	// Check, if set, health-checks every worker with an HTTP request:
	// a worker that fails two in a row is taken out until one passes.
	Check *HTTPCheck
	// Redispatch retries a request whose connection to a worker failed
	// (twice at most), the last time on another worker (option
	// redispatch): what keeps a restarting worker's refusals from the
	// clients until the checks take it out.
	Redispatch bool
}

// HTTPCheck is HAProxy's health check of a worker: Method Path with Body
// (of type ContentType) every Interval, passed by a 200.
type HTTPCheck struct {
	Method, Path      string
	Body, ContentType string
	Interval          time.Duration
}

// SluiceConfig is the suite's sluice.yaml: the defaults plus the listener,
// the upstreams, trusted peers 127.0.0.1 and tenants by the X-Tenant
// header.
type SluiceConfig struct {
	Listen  string
	Admin   string // host:port, or "off"
	Workers []string
	// Command, if set, has sluice start and supervise Count workers of
	// its own (workers.command, each told its port in PORT) instead of
	// forwarding to Workers: what sluice's rolling restart needs.
	Command []string
	Count   int
	// Env is workers.env: the supervised workers' environment beside
	// sluice's own. The suite's other setups start their workers with
	// theirs (NODE_ENV=production), and sluice's are given the same.
	Env map[string]string
	// Concurrency is each upstream's concurrency. 0 leaves the key out:
	// sluice's default, auto (found at run time per worker). The demo
	// workers' setups give 1: they are single-threaded.
	Concurrency int
	// Extra is YAML appended to the file, for diagnostic variants; it
	// must not repeat a section the template writes.
	Extra string
}

// Render writes the configuration file's text.
func (c NginxConfig) Render() ([]byte, error) { return render("nginx.conf.tmpl", c) }

// Render writes the configuration file's text.
func (c HAProxyConfig) Render() ([]byte, error) {
	if c.QueueTimeout <= 0 || c.QueueTimeout%time.Millisecond != 0 {
		return nil, fmt.Errorf("eval: haproxy queue timeout %v: want a positive whole number of milliseconds", c.QueueTimeout)
	}
	if c.MaxConn < 0 {
		return nil, fmt.Errorf("eval: haproxy maxconn %d: want 0 (meaning 1) or more", c.MaxConn)
	}
	var check *haproxyCheck
	if c.Check != nil {
		ch, err := c.Check.haproxy()
		if err != nil {
			return nil, err
		}
		check = &ch
	}
	return render("haproxy.cfg.tmpl", struct {
		Listen       string
		Workers      []string
		QueueTimeout string
		MaxConn      int
		Check        *haproxyCheck
		Redispatch   bool
	}{c.Listen, c.Workers, fmt.Sprintf("%dms", c.QueueTimeout/time.Millisecond), max(c.MaxConn, 1), check, c.Redispatch})
}

// haproxyCheck is an HTTPCheck as haproxy.cfg.tmpl writes it.
type haproxyCheck struct {
	Method, Path, Body, ContentType, Interval string
}

// haproxy validates the check for haproxy.cfg: each field one word, the
// body free of the single quote that delimits it there.
func (c HTTPCheck) haproxy() (haproxyCheck, error) {
	if c.Interval <= 0 || c.Interval%time.Millisecond != 0 {
		return haproxyCheck{}, fmt.Errorf("eval: haproxy check interval %v: want a positive whole number of milliseconds", c.Interval)
	}
	for _, f := range []string{c.Method, c.Path} {
		if f == "" || strings.ContainsAny(f, " \t\n'\"#\\") {
			return haproxyCheck{}, fmt.Errorf("eval: haproxy check %q: want one word", f)
		}
	}
	if strings.ContainsAny(c.Body, "'\n") || strings.ContainsAny(c.ContentType, " \t\n'\"#\\") || (c.Body != "") != (c.ContentType != "") {
		return haproxyCheck{}, fmt.Errorf("eval: haproxy check body %q of type %q: want both or neither, the body one line without ', the type one word", c.Body, c.ContentType)
	}
	return haproxyCheck{c.Method, c.Path, c.Body, c.ContentType, fmt.Sprintf("%dms", c.Interval/time.Millisecond)}, nil
}

// Render writes the configuration file's text.
func (c SluiceConfig) Render() ([]byte, error) {
	if (len(c.Command) > 0) == (len(c.Workers) > 0) || (len(c.Command) > 0 && c.Count < 1) {
		return nil, fmt.Errorf("eval: sluice.yaml: want upstreams (%d) or a worker command (%q) with a count (%d), not both", len(c.Workers), c.Command, c.Count)
	}
	if len(c.Env) > 0 && len(c.Command) == 0 {
		return nil, fmt.Errorf("eval: sluice.yaml: an environment (%v) is for supervised workers, and there is no worker command", c.Env)
	}
	return render("sluice.yaml.tmpl", c)
}

func render(name string, data any) ([]byte, error) {
	t, err := template.ParseFS(configFS, "configs/"+name)
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", name, err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return nil, fmt.Errorf("eval: %s: %w", name, err)
	}
	return b.Bytes(), nil
}

// Front is a running front server the load is sent to.
type Front struct {
	Name string
	// URL is where the load goes, without query.
	URL   string
	Procs []*Process
	// Admin is sluice's admin listener, host:port; "" for the others.
	Admin string
	// cpu, if set, is what CPUTime returns: a supervising sluice's own,
	// its workers' left out.
	cpu func() time.Duration
}

// CPUTime returns the CPU time the front's processes have used so far.
func (f *Front) CPUTime() time.Duration {
	if f.cpu != nil {
		return f.cpu()
	}
	var d time.Duration
	for _, p := range f.Procs {
		d += p.CPUTime()
	}
	return d
}

// Stop stops the front's processes, the first-started last.
func (f *Front) Stop() {
	for i := len(f.Procs) - 1; i >= 0; i-- {
		f.Procs[i].Stop(15 * time.Second)
	}
}

// StartNginxHAProxy starts HAProxy (haproxyBin, foreground) over workers
// with the given queue timeout, maxconn 1 each, and nginx (nginxBin,
// foreground) in front of it, with their configuration files and logs in
// dir, and waits until a request through both reaches a worker.
func StartNginxHAProxy(ctx context.Context, name, nginxBin, haproxyBin string, workers []string, queueTimeout time.Duration, dir string) (*Front, error) {
	return startNginxHAProxy(ctx, name, nginxBin, haproxyBin, HAProxyConfig{Workers: workers, QueueTimeout: queueTimeout}, dir, getReady("?cpu=0"))
}

// readyFunc waits until the front whose base URL (ending in "/") is given
// passes a request to a worker.
type readyFunc func(ctx context.Context, base string) error

// getReady waits until a GET of the base URL with query answers 2xx.
func getReady(query string) readyFunc {
	return func(ctx context.Context, base string) error { return WaitHTTP(ctx, base+query) }
}

// startNginxHAProxy is StartNginxHAProxy with h's settings but its Listen,
// and ready the wait that shows the chain works.
func startNginxHAProxy(ctx context.Context, name, nginxBin, haproxyBin string, h HAProxyConfig, dir string, ready readyFunc) (*Front, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	haddr, naddr := addrs[0], addrs[1]
	h.Listen = haddr
	hcfg, err := h.Render()
	if err != nil {
		return nil, err
	}
	ncfg, err := NginxConfig{Listen: naddr, Upstream: haddr, Dir: dir}.Render()
	if err != nil {
		return nil, err
	}
	return runNginxHAProxy(ctx, name, nginxBin, haproxyBin, dir, hcfg, ncfg, "http://"+naddr+"/", ready)
}

// runNginxHAProxy writes the two configs to dir, starts HAProxy and then
// nginx in front of it, and waits until ready(url) says a request passes
// through both.
func runNginxHAProxy(ctx context.Context, name, nginxBin, haproxyBin, dir string, hcfg, ncfg []byte, url string, ready readyFunc) (*Front, error) {
	hpath, npath := filepath.Join(dir, "haproxy.cfg"), filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(hpath, hcfg, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(npath, ncfg, 0o644); err != nil {
		return nil, err
	}
	f := &Front{Name: name, URL: url}
	// -db: stay in the foreground, so that its PID is the one we stop.
	hp, err := StartProcess(name+"-haproxy", filepath.Join(dir, "haproxy.log"), nil, haproxyBin, "-db", "-f", hpath)
	if err != nil {
		return nil, err
	}
	f.Procs = append(f.Procs, hp)
	np, err := StartProcess(name+"-nginx", filepath.Join(dir, "nginx.log"), nil, nginxBin, "-p", dir, "-c", npath)
	if err != nil {
		f.Stop()
		return nil, err
	}
	f.Procs = append(f.Procs, np)
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := waitUntil(wctx, func(ctx context.Context) error { return ready(ctx, f.URL) }, hp, np); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

// StartSluice starts `sluiceBin serve` over workers with the suite's
// configuration (upstreams of concurrency 1) plus extra (see
// SluiceConfig.Extra), written to dir, and waits until it is ready.
func StartSluice(ctx context.Context, name, sluiceBin string, workers []string, dir, extra string) (*Front, error) {
	return startSluice(ctx, name, sluiceBin, SluiceConfig{Workers: workers, Concurrency: 1, Extra: extra}, dir)
}

// startSluice is StartSluice with c's settings but its Listen and Admin.
func startSluice(ctx context.Context, name, sluiceBin string, c SluiceConfig, dir string) (*Front, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	c.Listen, c.Admin = addrs[0], addrs[1]
	cfg, err := c.Render()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return nil, err
	}
	p, err := StartProcess(name, filepath.Join(dir, "sluice.log"), nil, sluiceBin, "serve", "-c", path)
	if err != nil {
		return nil, err
	}
	f := &Front{Name: name, URL: "http://" + c.Listen + "/", Procs: []*Process{p}, Admin: c.Admin}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := WaitStarted(wctx, "http://"+c.Listen+"/__sluice/ready", p); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

// StartSelf starts the harness binary itself (os.Executable) with args, as
// a front that listens on addr and answers readyPath once it serves.
func StartSelf(ctx context.Context, name, addr, readyPath, logDir string, env []string, args ...string) (*Front, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	p, err := StartProcess(name, filepath.Join(logDir, name+".log"), env, append([]string{self}, args...)...)
	if err != nil {
		return nil, err
	}
	f := &Front{Name: name, URL: "http://" + addr + "/", Procs: []*Process{p}}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := WaitStarted(wctx, "http://"+addr+readyPath, p); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

// ToolVersion runs bin with args and returns the first line it prints (on
// either stream), e.g. nginx's "nginx version: nginx/1.22.1".
func ToolVersion(bin string, args ...string) string {
	out, err := exec.Command(bin, args...).CombinedOutput()
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	if line == "" && err != nil {
		return "unknown (" + err.Error() + ")"
	}
	return line
}
