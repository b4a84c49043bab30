package app

import (
	"log/slog"
	"net/http"
	"sync/atomic"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
	"github.com/sluicehq/sluice/server"
)

// live is what a reload changes while requests are served; each part is
// read by the request path through an atomic pointer, so a request sees
// the old or the new value, never a mix within one part.
type live struct {
	cls     atomic.Pointer[admission.Classifier]
	fbs     atomic.Pointer[routeFallbacks]
	weights atomic.Pointer[map[string]float64]
	// fixed is the Controller's limit algorithm when it is a fixed limit
	// (front mode; library mode with a fixed algorithm or no backpressure):
	// the Controller adopts its value at its next sample window.
	fixed *limit.Fixed
	inner http.Handler // the proxy or the library handler
	top   atomic.Pointer[http.Handler]
	certs *server.Certs // nil without TLS
	// workers is the supervisor (nil without workers); prevCmd, what its
	// workers ran before the last reload that changed it, put back if
	// the roll to the new one fails.
	workers *supervisor.Supervisor
	prevCmd supervisor.Command
}

// routes sets the classifier and the routes' fallbacks from cfg; base is
// the directory of its file.
func (l *live) routes(cfg *config.Config, base string) error {
	cls, fbs, err := routes(cfg, base)
	if err == nil {
		l.cls.Store(cls)
		l.fbs.Store(fbs)
	}
	return err
}

func (l *live) classify(r *http.Request) admission.Request { return l.cls.Load().Classify(r) }

// fallback is the proxy's SelectFallback: the routes' fallbacks, swapped
// with them on reload.
func (l *live) fallback(r *http.Request) *proxy.Fallback { return l.fbs.Load().choose(r) }

// streamBounds is the proxy's SelectStreamBounds: the routes' stream
// bounds, swapped with them on reload.
func (l *live) streamBounds(r *http.Request) proxy.StreamBounds { return l.fbs.Load().streamBounds(r) }

func (l *live) trust(r *http.Request) proxy.Trust {
	c := l.cls.Load()
	return proxy.Trust{Peer: c.Trusted(r), Proxy: c.TrustedProxy(r)}
}

func (l *live) tenantWeight(t string) float64 {
	if w := l.weights.Load(); w != nil {
		return (*w)[t]
	}
	return 0
}

func (l *live) ServeHTTP(w http.ResponseWriter, r *http.Request) { (*l.top.Load()).ServeHTTP(w, r) }

// controllerOptions makes the Controller's reloadable options read l: the
// tenants' weights (a weight of 0 is the Controller's default of 1, as
// with no TenantWeight at all) and a fixed limit.
func (l *live) controllerOptions(cfg *config.Config, o *admission.Options) {
	w := cfg.Tenants.Weights
	l.weights.Store(&w)
	o.TenantWeight = l.tenantWeight
	l.fixed, _ = o.Limit.(*limit.Fixed)
}

// proxyOptions makes the proxy classify, trust and choose fallbacks
// through l.
func (l *live) proxyOptions(o *proxy.Options) {
	o.Classify = l.classify
	o.Trust = l.trust
	o.SelectFallback = l.fallback
	o.SelectStreamBounds = l.streamBounds
}

// front wraps inner, the proxy or the library handler, in what cfg asks for
// around it (compression, the access log) and returns the handler that
// serves through the current wrapping.
func (l *live) front(cfg *config.Config, inner http.Handler, log *slog.Logger) (http.Handler, error) {
	l.inner = inner
	top, err := l.wrap(cfg, log)
	if err != nil {
		return nil, err
	}
	l.top.Store(&top)
	return l, nil
}

func (l *live) wrap(cfg *config.Config, log *slog.Logger) (http.Handler, error) {
	h, err := compression(cfg.Compression, l.inner)
	if err != nil {
		return nil, err
	}
	o := observing{serverTiming: cfg.Server.ServerTiming, traceparent: cfg.Server.GenerateTraceparent}
	if cfg.Server.AccessLog {
		o.log = log
	}
	return l.observe(h, o), nil
}

// tlsCerts loads the certificate pair when cfg enables TLS, for the
// server's TLSConfig (nil without TLS): the files are read again when they
// change, and on reload.
func (l *live) tlsCerts(cfg *config.Config, base string, log *slog.Logger) (*server.Certs, error) {
	t := cfg.Server.TLS
	if !t.Enabled() {
		return nil, nil
	}
	c, err := server.NewCerts(resolve(base, t.CertFile), resolve(base, t.KeyFile), server.CertsOptions{Logger: log})
	if err != nil {
		return nil, err
	}
	l.certs = c
	return c, nil
}
