package app

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/poison"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/server"
)

// The options of the server, the classifier, the proxy, the supervisor and
// the static upstreams, from the configuration (see controller.go).

// none is where the file's zero becomes the components'. In sluice.yaml a
// bound written 0 is off: no timeout, no limit, no queue
// (docs/configuration.md, "Zero"). A component's zero value is its
// default, so that its zero Options work, and a negative value is its
// "none". Every option whose key's 0 is "none" is mapped through none,
// and nothing else translates zero (TestZeroIsNone).
func none[T ~int | ~int64](v T) T {
	if v == 0 {
		return -1
	}
	return v
}

// classifier builds the request classifier from routes, tenants and trust.
func classifier(cfg *config.Config) (*admission.Classifier, error) {
	key, err := admission.ParseTenantKey(cfg.Tenants.Key)
	if err != nil {
		return nil, err
	}
	c := &admission.Classifier{TrustedPeers: cfg.Server.TrustedPeers, TrustedProxies: cfg.Server.TrustedProxies, Tenant: key}
	for _, r := range cfg.Routes {
		p, err := admission.ParsePriority(r.Priority)
		if err != nil {
			return nil, err
		}
		rule := admission.Rule{Method: r.Match.Method, PathPrefix: r.Match.PathPrefix, Priority: p, Cost: r.Cost, Timeout: r.Timeout}
		if r.Quota != nil {
			rule.Quota = config.QuotaName(&r)
		}
		if h := r.Match.Header; h != "" {
			name, value, _ := strings.Cut(h, ":")
			rule.Header, rule.HeaderValue = strings.TrimSpace(name), strings.TrimSpace(value)
		}
		c.Rules = append(c.Rules, rule)
	}
	return c, nil
}

// routes builds the classifier and the routes' fallbacks from cfg's
// routes, tenants and trust; base is the directory of cfg's file.
func routes(cfg *config.Config, base string) (*admission.Classifier, *routeFallbacks, error) {
	cls, err := classifier(cfg)
	if err != nil {
		return nil, nil, err
	}
	fbs, err := newRouteFallbacks(cfg, cls, base)
	if err != nil {
		return nil, nil, err
	}
	return cls, fbs, nil
}

// proxyOptions builds the proxy's options but those a reload changes
// (Classify, Trust, SelectFallback, SelectStreamBounds), which
// live.proxyOptions sets.
func proxyOptions(cfg *config.Config, ctrl *admission.Controller, log *slog.Logger) (proxy.Options, error) {
	p := cfg.Proxy
	o := proxy.Options{
		Controller:          ctrl,
		WorkerLimit:         proxy.WorkerLimit{MaxSaturation: p.SaturationMax},
		Timeout:             none(p.Timeout),
		MaxBodyBytes:        none(p.MaxBodyBytes), // bounded by MaxBufferedBytes alone
		MaxBufferedBytes:    p.MaxBufferedBytes,   // 0: derived from the machine, as in the file
		BufferResponseBytes: none(p.BufferResponseBytes),
		MaxUpgrades:         p.MaxUpgrades,
		Lookahead:           none(p.Lookahead),
		StreamIdleTimeout:   none(p.StreamIdleTimeout),
		StreamTimeout:       none(p.StreamTimeout),
		StreamHold:          none(p.StreamHold),
		MaxStreams:          p.MaxStreams,
		SlowStart:           slowStart(cfg),
		Logger:              log,
	}
	o.MaxHeaderFields, o.UnderscoresInHeaders = p.MaxHeaderFields, p.UnderscoresInHeaders
	if !p.KernelSaturation {
		o.WorkerDemand = proxy.NoDemand
	}
	if w := cfg.Workers; w != nil && w.Poison.Enabled {
		// Only supervised workers: the supervisor reports their deaths.
		t, err := poison.New(poison.Options{After: w.Poison.After, Window: w.Poison.Window,
			Quarantine: w.Poison.Quarantine, MaxQuarantine: w.Poison.MaxQuarantine})
		if err != nil {
			return proxy.Options{}, err
		}
		o.Poison = t
	}
	return o, nil
}

// routeFallbacks is each route's fallback, by the index of the
// classifier rule the route became: a fallback belongs to its route, and
// the first route a request matches (method, path, header) decides.
type routeFallbacks struct {
	cls       *admission.Classifier // the rules the indexes refer to
	fallbacks []*proxy.Fallback     // nil: the route has none
	methods   []string              // each route's match.method
	streams   []proxy.StreamBounds  // each route's stream bounds; zero: the proxy's
}

// newRouteFallbacks reads cfg's routes' fallbacks (a file's body now),
// against cls, the classifier built from the same routes.
func newRouteFallbacks(cfg *config.Config, cls *admission.Classifier, base string) (*routeFallbacks, error) {
	rf := &routeFallbacks{cls: cls, fallbacks: make([]*proxy.Fallback, len(cfg.Routes)), methods: make([]string, len(cfg.Routes)),
		streams: make([]proxy.StreamBounds, len(cfg.Routes))}
	for i, r := range cfg.Routes {
		rf.methods[i] = r.Match.Method
		rf.streams[i] = proxy.StreamBounds{Idle: r.StreamIdleTimeout, Total: r.StreamTimeout}
		if r.Fallback == nil {
			continue
		}
		body := []byte(r.Fallback.Body)
		if f := r.Fallback.File; f != "" {
			b, err := os.ReadFile(resolve(base, f))
			if err != nil {
				return nil, fmt.Errorf("routes[%d].fallback: %w", i, err)
			}
			body = b
		}
		rf.fallbacks[i] = &proxy.Fallback{PathPrefix: "/", Status: r.Fallback.Status, ContentType: r.Fallback.ContentType, Body: body,
			OnWorkerError: r.Fallback.OnWorkerError, Props: r.Fallback.Props}
	}
	return rf, nil
}

// choose returns the fallback for r: its route's, if the first route r
// matches has one. A request that changes state (any method but GET, HEAD
// and OPTIONS) never gets a fallback in place of the work it asked for,
// unless its route's match names that method: a shed POST must not read
// as done.
func (rf *routeFallbacks) choose(r *http.Request) *proxy.Fallback {
	i := rf.cls.Match(r)
	if i < 0 || i >= len(rf.fallbacks) || rf.fallbacks[i] == nil {
		return nil
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if rf.methods[i] != r.Method {
			return nil
		}
	}
	return rf.fallbacks[i]
}

// streamBounds returns the stream bounds of the first route r matches;
// zero fields (no route, or none set) keep the proxy's.
func (rf *routeFallbacks) streamBounds(r *http.Request) proxy.StreamBounds {
	if i := rf.cls.Match(r); i >= 0 && i < len(rf.streams) {
		return rf.streams[i]
	}
	return proxy.StreamBounds{}
}

// supervisorOptions builds the worker supervisor's options.
func supervisorOptions(w *config.Workers, base string, out io.Writer, log *slog.Logger) supervisor.Options {
	concurrency, adaptive := w.Concurrency.Limit(w.MaxConcurrency)
	o := supervisor.Options{
		Command:         w.Command,
		Count:           w.Count.Resolve(numCPU()),
		Concurrency:     concurrency,
		Adaptive:        adaptive,
		Dir:             resolve(base, w.Dir),
		AddressMode:     supervisor.AddressMode(w.Address),
		ReadyPath:       w.ReadyPath,
		StartTimeout:    w.StartTimeout,
		WarmupRequests:  w.WarmupRequests,
		WarmupPath:      w.WarmupPath,
		BackoffMin:      w.RestartBackoff.Initial,
		BackoffMax:      w.RestartBackoff.Max,
		CrashLoopExits:  w.CrashLoop.Exits,
		CrashLoopWindow: w.CrashLoop.Window,
		StopTimeout:     w.StopTimeout,
		Roll:            supervisor.RollMode(w.Roll),
		Logger:          log,
		Output:          out,
	}
	for k, v := range w.Env {
		o.Env = append(o.Env, k+"="+v)
	}
	return o
}

// WorkerCommand returns what cfg's workers run, their directory resolved
// against that of source, the file cfg was read from, as sluice serve
// starts them; false when cfg has no workers.
func WorkerCommand(cfg *config.Config, source string) (supervisor.Command, bool) {
	if cfg.Workers == nil {
		return supervisor.Command{}, false
	}
	return commandOf(supervisorOptions(cfg.Workers, baseDir(source), nil, nil)), true
}

// resolve makes p relative to the config file's directory base.
func resolve(base, p string) string {
	if p == "" || filepath.IsAbs(p) || base == "" {
		return p
	}
	return filepath.Join(base, p)
}

func slowStart(cfg *config.Config) time.Duration {
	if cfg.Workers == nil {
		return 0
	}
	return cfg.Workers.SlowStart
}

// staticOptions builds the health checker of upstreams sluice does not
// start. "unix:/path" addresses are Unix sockets.
func staticOptions(u *config.Upstreams, log *slog.Logger) supervisor.StaticOptions {
	o := supervisor.StaticOptions{
		HealthPath: u.HealthCheck.Path,
		Interval:   u.HealthCheck.Interval,
		Timeout:    u.HealthCheck.Timeout,
		Fails:      u.HealthCheck.Fails,
		Passes:     u.HealthCheck.Passes,
		Logger:     log,
	}
	for _, s := range u.Servers {
		n, adaptive := s.Concurrency.Limit(s.MaxConcurrency)
		e := supervisor.Endpoint{Network: "tcp", Addr: s.Address, Concurrency: n, Adaptive: adaptive}
		if path, ok := strings.CutPrefix(s.Address, "unix:"); ok {
			e.Network, e.Addr = "unix", path
		}
		o.Upstreams = append(o.Upstreams, e)
	}
	return o
}

// Procs is the GOMAXPROCS `sluice serve` runs with on a machine of cpus
// usable CPUs: server.procs when set, else cpus.
//
// Fewer Ps than CPUs is a trade, so it is the operator's to make. With
// one P the front spends a quarter less CPU per request (no idle P for
// the scheduler to wake at each hand-off between goroutines: at 2,000
// requests/s to two Node workers, 162-202 ms of CPU per 1,000 requests
// against 239-274 ms on two), but a dispatch then waits behind whatever
// else the one P is doing: behind sluice on one P, two React renderers
// under 4x and 8x overload served 11-28% less than on two, measured
// side by side (docs/benchmarks.md, "One P for the front").
func Procs(cfg *config.Config, cpus int) int {
	if cfg.Server.Procs > 0 {
		return cfg.Server.Procs
	}
	return cpus
}

// newServer builds the server of the front from the configuration.
func newServer(sc config.Server, h http.Handler, ready func() bool, log *slog.Logger) *server.Server {
	return &server.Server{
		Addr:             sc.Listen,
		Handler:          h,
		H2C:              sc.H2C,
		KeepAliveTimeout: none(sc.KeepAliveTimeout),
		HeadersTimeout:   none(sc.HeadersTimeout),
		RequestTimeout:   none(sc.RequestTimeout),
		ShutdownTimeout:  sc.ShutdownTimeout,
		DrainDelay:       none(sc.DrainDelay),
		MaxHeaderBytes:   int(sc.MaxHeaderBytes),
		MaxConnections:   none(sc.MaxConnections),
		SendTimeout:      none(sc.SendTimeout),
		HealthPath:       sc.HealthPath,
		ReadyPath:        sc.ReadyPath,
		Ready:            ready,
		Logger:           log,
	}
}
