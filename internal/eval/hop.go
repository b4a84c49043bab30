package eval

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Scenario hop-cpu measures the CPU the front itself
// spends per request, sluice beside nginx -> HAProxy, on the same two
// trivial Node.js workers (node:http, no framework: a 250-byte JSON
// answer, or an 80 KB HTML page), both fronts allowing 8 requests per
// worker. Rounds alternate the fronts, so that a noisy minute on the
// shared machine falls on both. Each round measures, per body and client
// protocol:
//
//   - the front's CPU per 1,000 requests at a fixed offered rate
//     (HopCPURate, or Options.HopRate; open loop, keep-alive), read from
//     /proc for the front's process group (nginx and HAProxy summed);
//   - closed-loop throughput with HopCPUClients clients, and the CPU per
//     1,000 requests meanwhile;
//
// and, under overload (workers that spend HopCPUSpin of CPU per request,
// offered HopCPUMultiples of their capacity), the share of a core the
// front takes: the CPU left to the renders.
const ScenarioHopCPU = "hop-cpu"

// Settings of scenario hop-cpu.
const (
	HopCPURate        = 2000 // requests per second of the fixed-rate measurement
	HopCPUClients     = 16   // clients of the closed-loop measurement
	HopCPUConcurrency = 8    // requests per worker, on both fronts
	HopCPURounds      = 3    // alternating rounds
	// HopCPUSpin is the CPU each request of the overload measurement
	// costs its worker (?spin=): a render.
	HopCPUSpin = 10 * time.Millisecond
)

// HopCPUMultiples are the offered loads of the overload measurement, in
// capacities of the spinning workers.
func HopCPUMultiples() []float64 { return []float64{2, 4, 8} }

// Setup names of scenario hop-cpu.
const (
	HopSluice   = SetupSluice     // sluice serve, upstreams of concurrency 8
	HopBaseline = "sluice-before" // the same with Options.HopBaseline, a build to compare with
	HopNginxHA  = "nginx-haproxy" // nginx -> HAProxy, maxconn 8, timeout queue 500ms
)

// hopVariant is what the clients ask for and how.
type hopVariant struct {
	Body   string // "json" (250 bytes) or "html" (80 KB)
	Client string // "h1" (HTTP/1.1 keep-alive) or "h2" (HTTP/2, prior knowledge)
}

func (v hopVariant) path() string {
	if v.Body == "html" {
		return "html"
	}
	return ""
}

// hopVariants are the bodies and client protocols measured, in table order.
func hopVariants() []hopVariant {
	return []hopVariant{{"json", "h1"}, {"html", "h1"}, {"json", "h2"}}
}

// hopWorkerJS is the workers' script: node:http and nothing else, so that
// the fronts are compared on requests that cost the worker almost nothing.
const hopWorkerJS = `'use strict';
// The evaluation suite's hop-cpu worker (written by eval/hop.go).
//   GET /          a 250-byte JSON object
//   GET /html      an 80 KB HTML page
//   GET /?spin=MS  the JSON after MS ms of CPU (a render), 0..1000
//   GET /healthz   200 "ok"
const http = require('node:http');
const { performance } = require('node:perf_hooks');
const base = { ok: true, worker: process.pid, items: Array.from({ length: 12 }, (_, i) => 'item-' + i), pad: '' };
base.pad = 'x'.repeat(Math.max(0, 250 - Buffer.byteLength(JSON.stringify(base))));
const json = Buffer.from(JSON.stringify(base));
let html = '<!doctype html><html><head><title>hop</title></head><body>\n';
while (html.length < 80 * 1024 - 16) html += '<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n';
const page = Buffer.from(html + '</body></html>\n');
function send(res, type, body) {
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': body.length });
  res.end(body);
}
const server = http.createServer((req, res) => {
  if (req.url === '/healthz') return send(res, 'text/plain', Buffer.from('ok\n'));
  if (req.url.startsWith('/html')) return send(res, 'text/html; charset=utf-8', page);
  const m = /[?&]spin=(\d+)/.exec(req.url);
  if (m) {
    const end = performance.now() + Math.min(Number(m[1]), 1000);
    while (performance.now() < end) {}
  }
  send(res, 'application/json', json);
});
server.keepAliveTimeout = 65000; // the fronts close idle connections first
server.listen(Number(process.env.PORT), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
`

// hopReadyPath is the workers' readiness path.
const hopReadyPath = "/healthz"

// startHopWorkers writes the worker script to dir and starts n workers on
// l's worker CPUs.
func startHopWorkers(ctx context.Context, nodeBin string, n int, dir string, l Layout) (*Pool, error) {
	script := filepath.Join(dir, "hop-worker.js")
	if err := os.WriteFile(script, []byte(hopWorkerJS), 0o644); err != nil {
		return nil, err
	}
	return startWorkers(ctx, n, hopReadyPath, dir, l, func(i, port int) procSpec {
		return procSpec{name: fmt.Sprintf("hop-worker-%d", i+1), env: []string{"PORT=" + strconv.Itoa(port)}, argv: []string{nodeBin, script}}
	})
}

// hopFront is a front of scenario hop-cpu: where HTTP/1.1 and HTTP/2
// clients send their requests.
type hopFront struct {
	name  string
	front *Front
	h1    string // base URL, ending in "/"
	h2    string // base URL for HTTP/2 prior-knowledge clients
}

// startHopSluice starts `bin serve` over workers, concurrency 8 each,
// with h2c on (HTTP/2 without TLS beside HTTP/1.1 on the one listener).
func startHopSluice(ctx context.Context, name, bin string, workers []string, dir string) (*hopFront, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addrs, err := freeAddrs(2)
	if err != nil {
		return nil, err
	}
	c := SluiceConfig{Listen: addrs[0], Admin: addrs[1], Workers: workers, Concurrency: HopCPUConcurrency}
	cfg, err := c.Render()
	if err != nil {
		return nil, err
	}
	cfg, err = withLine(cfg, "  trustedPeers: [127.0.0.1]\n", "  h2c: true\n")
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, cfg, 0o644); err != nil {
		return nil, err
	}
	p, err := StartProcess(name, filepath.Join(dir, "sluice.log"), nil, bin, "serve", "-c", path)
	if err != nil {
		return nil, err
	}
	f := &Front{Name: name, URL: "http://" + c.Listen + "/", Procs: []*Process{p}, Admin: c.Admin}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := WaitStarted(wctx, f.URL+"__sluice/ready", p); err != nil {
		f.Stop()
		return nil, err
	}
	return &hopFront{name: name, front: f, h1: f.URL, h2: f.URL}, nil
}

// startHopNginxHAProxy starts HAProxy (maxconn 8 per worker, timeout
// queue 500 ms) and nginx in front of it, nginx with a second listener
// for HTTP/2 prior-knowledge clients (nginx 1.22 serves h2c only on a
// listener of its own).
func startHopNginxHAProxy(ctx context.Context, name, nginxBin, haproxyBin string, workers []string, dir string) (*hopFront, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var ports [3]int
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		ports[i] = p
	}
	hlisten := "127.0.0.1:" + strconv.Itoa(ports[0])
	nlisten := "127.0.0.1:" + strconv.Itoa(ports[1])
	h2listen := "127.0.0.1:" + strconv.Itoa(ports[2])
	hcfg, err := HAProxyConfig{Listen: hlisten, Workers: workers, QueueTimeout: 500 * time.Millisecond, MaxConn: HopCPUConcurrency}.Render()
	if err != nil {
		return nil, err
	}
	ncfg, err := NginxConfig{Listen: nlisten, Upstream: hlisten, Dir: dir}.Render()
	if err != nil {
		return nil, err
	}
	ncfg, err = withLine(ncfg, "        listen "+nlisten+" backlog=4096;\n", "        listen "+h2listen+" http2 backlog=4096;\n")
	if err != nil {
		return nil, err
	}
	f, err := runNginxHAProxy(ctx, name, nginxBin, haproxyBin, dir, hcfg, ncfg, "http://"+nlisten+"/", getReady(""))
	if err != nil {
		return nil, err
	}
	return &hopFront{name: name, front: f, h1: f.URL, h2: "http://" + h2listen + "/"}, nil
}

// withLine returns cfg with add inserted after the line after, which must
// be there: the one place a rendered configuration differs for hop-cpu.
func withLine(cfg []byte, after, add string) ([]byte, error) {
	s := string(cfg)
	i := strings.Index(s, after)
	if i < 0 {
		return nil, fmt.Errorf("eval: hop-cpu: %q not found in the rendered configuration", strings.TrimSpace(after))
	}
	i += len(after)
	return []byte(s[:i] + add + s[i:]), nil
}

// hopTransport returns the clients' transport for protocol client ("h1"
// or "h2"), keep-alive, pooling up to conns connections. It asks for no
// compression: sluice compresses by default and the suite's nginx does not,
// and what is compared here is the proxying, not gzip.
func hopTransport(client string, conns int) *http.Transport {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: conns, DisableCompression: true}
	if client == "h2" {
		var p http.Protocols
		p.SetUnencryptedHTTP2(true)
		tr.Protocols = &p
	}
	return tr
}
