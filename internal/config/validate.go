package config

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// priorityList names the priority classes for an error message:
// "critical-plus, critical, sheddable-plus or sheddable".
func priorityList() string {
	ps := admission.Priorities()
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.String()
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// Validate checks the ranges of c's values and the relations between them,
// and returns every problem found as Errors, or nil. Parse and ResolveWith have
// already done it; call it on a Config built or changed in Go. Its errors
// name keys but not lines.
func (c *Config) Validate() error {
	v := &validator{}
	v.config(c)
	if len(v.errs) == 0 {
		return nil
	}
	return v.errs
}

// validator collects problems, one per key: the first found is the one
// reported, so a specific message ("must be at least 1") found before the
// generic sweep ("must not be negative") is the one kept.
type validator struct {
	file   string
	lines  map[string]int  // from the decoder; nil for a Go-built config
	skip   map[string]bool // keys that did not decode: already reported
	front  bool            // workers or upstreams: see FrontMode
	quota  bool            // tenants.quota is set
	errs   Errors
	warns  Errors          // keys written that have no effect (effect.go)
	warned map[string]bool // keys in warns
	seen   map[string]bool
	// byFlag maps a key set by a flag to the flag ("--listen"): its
	// problems are the flag's, not the file's.
	byFlag     map[string]string
	overridden []Overridden
}

func (v *validator) errorf(path, format string, args ...any) {
	if v.seen[path] || v.skipped(path) {
		return
	}
	if v.seen == nil {
		v.seen = make(map[string]bool)
	}
	v.seen[path] = true
	if flag := v.byFlag[path]; flag != "" {
		v.errs = append(v.errs, &Error{Flag: flag, Path: path, Msg: fmt.Sprintf(format, args...)})
		return
	}
	v.errs = append(v.errs, &Error{File: v.file, Line: v.line(path), Path: path, Msg: fmt.Sprintf(format, args...)})
}

// skipped reports whether path or one of its ancestors did not decode.
func (v *validator) skipped(path string) bool {
	for path != "" {
		if v.skip[path] {
			return true
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return false
		}
		path = path[:i]
	}
	return false
}

// line returns the line of path, or of its nearest ancestor in the file: a
// key left at its default is reported where its section is.
func (v *validator) line(path string) int {
	for path != "" {
		if l := v.lines[path]; l > 0 {
			return l
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// set reports whether path was written in the file.
func (v *validator) set(path string) bool { return v.lines[path] > 0 }

func (v *validator) config(c *Config) {
	v.front = c.FrontMode()
	v.quota = c.Tenants.Quota != nil
	v.server(&c.Server)
	v.admin(&c.Admin)
	if c.Workers != nil {
		v.workers(c.Workers)
	}
	if c.Upstreams != nil {
		if c.Workers != nil {
			v.errorf("upstreams", "workers and upstreams are exclusive: sluice either supervises its own workers or forwards to servers it does not start")
		}
		v.upstreams(c.Upstreams)
	}
	v.proxy(c)
	v.overload(&c.Overload)
	v.tenants(&c.Tenants)
	for i := range c.Routes {
		v.route(fmt.Sprintf("routes[%d]", i), &c.Routes[i])
	}
	v.compression(&c.Compression)
	v.sweep("", reflect.ValueOf(c).Elem())
	v.effects(c)
	v.safety(c)
}

// sweep rejects what no key accepts: negative durations, sizes and counts,
// and numbers that are not finite.
func (v *validator) sweep(path string, rv reflect.Value) {
	switch rv.Kind() {
	case reflect.Struct:
		if rv.Type() == prefixType {
			return
		}
		t := rv.Type()
		for i := range t.NumField() {
			if name := t.Field(i).Tag.Get("yaml"); name != "" && name != "-" {
				v.sweep(join(path, name), rv.Field(i))
			}
		}
	case reflect.Pointer:
		if !rv.IsNil() {
			v.sweep(path, rv.Elem())
		}
	case reflect.Slice:
		for i := range rv.Len() {
			v.sweep(fmt.Sprintf("%s[%d]", path, i), rv.Index(i))
		}
	case reflect.Map:
		iter := rv.MapRange()
		for iter.Next() {
			v.sweep(join(path, iter.Key().String()), iter.Value())
		}
	case reflect.Int, reflect.Int64:
		if rv.Type() == queueSizeType && QueueSize(rv.Int()) == QueueSizeAuto {
			return // "auto", not a negative size
		}
		if rv.Int() < 0 {
			if rv.Type() == durationType {
				v.errorf(path, "%v must not be negative", time.Duration(rv.Int()))
				return
			}
			v.errorf(path, "%d must not be negative", rv.Int())
		}
	case reflect.Float64:
		if f := rv.Float(); math.IsNaN(f) || math.IsInf(f, 0) {
			v.errorf(path, "%v is not a finite number", f)
		} else if f < 0 {
			v.errorf(path, "%v must not be negative", f)
		}
	}
}

// positive reports a duration that must be > 0.
func (v *validator) positive(path string, d time.Duration) {
	if d <= 0 {
		v.errorf(path, "must be greater than 0 (got %v)", d)
	}
}

func (v *validator) atLeast(path string, n, least int) {
	if n < least {
		v.errorf(path, "%d must be at least %d", n, least)
	}
}

// urlPath checks a path sluice answers or asks for; "" is accepted only if
// optional.
func (v *validator) urlPath(path, p string, optional bool) {
	switch {
	case p == "" && optional:
	case p == "":
		v.errorf(path, "must not be empty")
	case p[0] != '/':
		v.errorf(path, "%q must start with /", p)
	case strings.ContainsAny(p, " \t\r\n?#"):
		v.errorf(path, "%q must be a plain path (no spaces, query or fragment)", p)
	}
}

func (v *validator) server(s *Server) {
	if err := checkHostPort("server.listen", s.Listen, true); err != nil {
		v.errorf("server.listen", "%v", err)
	}
	switch {
	case s.TLS.CertFile != "" && s.TLS.KeyFile == "":
		v.errorf("server.tls.certFile", "is set but keyFile is not: set both for HTTPS, or neither")
	case s.TLS.CertFile == "" && s.TLS.KeyFile != "":
		v.errorf("server.tls.keyFile", "is set but certFile is not: set both for HTTPS, or neither")
	}
	for _, f := range []struct{ path, value string }{{"server.tls.certFile", s.TLS.CertFile}, {"server.tls.keyFile", s.TLS.KeyFile}} {
		if keyMaterial(f.value) || strings.ContainsAny(f.value, "\n\r") {
			v.errorf(f.path, "holds PEM text, not a file name: write the path of the PEM file (the value is not shown)")
		}
	}
	if s.H2C && s.TLS.Enabled() {
		v.errorf("server.h2c", "h2c is HTTP/2 without TLS; with TLS, HTTP/2 is negotiated by ALPN: remove one")
	}
	if s.MaxHeaderBytes <= 0 {
		v.errorf("server.maxHeaderBytes", "must be greater than 0 (got %d)", s.MaxHeaderBytes)
	}
	v.positive("server.shutdownTimeout", s.ShutdownTimeout)
	if s.ShutdownTimeout > 0 && s.DrainDelay >= s.ShutdownTimeout {
		v.errorf("server.drainDelay", "%v is not shorter than shutdownTimeout (%v): no time would be left to drain", s.DrainDelay, s.ShutdownTimeout)
	}
	v.urlPath("server.healthPath", s.HealthPath, false)
	v.urlPath("server.readyPath", s.ReadyPath, false)
	if s.HealthPath != "" && s.HealthPath == s.ReadyPath {
		v.errorf("server.readyPath", "%q is also healthPath: liveness and readiness need their own paths", s.ReadyPath)
	}
	for i, p := range s.TrustedPeers {
		if !p.IsValid() {
			v.errorf(fmt.Sprintf("server.trustedPeers[%d]", i), "not a valid CIDR")
		}
	}
	for i, p := range s.TrustedProxies {
		if !p.IsValid() {
			v.errorf(fmt.Sprintf("server.trustedProxies[%d]", i), "not a valid CIDR")
		}
	}
	v.backpressure(s)
}

func (v *validator) backpressure(s *Server) {
	const at = "server.backpressure."
	b := &s.Backpressure
	switch b.Algorithm {
	case AlgorithmAuto, AlgorithmAIMD, AlgorithmGradient, AlgorithmFixed:
	default:
		v.errorf(at+"algorithm", "%q is not an algorithm (want auto, aimd, gradient or fixed)", b.Algorithm)
	}
	v.atLeast(at+"minLimit", b.MinLimit, 1)
	if b.MinLimit > b.MaxLimit {
		// Blame the key the file wrote: a default is rarely the mistake.
		if v.set(at+"maxLimit") && !v.set(at+"minLimit") {
			v.errorf(at+"maxLimit", "%d is less than minLimit (%d)", b.MaxLimit, b.MinLimit)
		} else {
			v.errorf(at+"minLimit", "%d is greater than maxLimit (%d)", b.MinLimit, b.MaxLimit)
		}
	}
	if b.InitialLimit != 0 && (b.InitialLimit < b.MinLimit || b.InitialLimit > b.MaxLimit) {
		v.errorf(at+"initialLimit", "%d is outside [minLimit, maxLimit] = [%d, %d] (0 means maxLimit)", b.InitialLimit, b.MinLimit, b.MaxLimit)
	}
	if !(b.SaturationMax > 0 && b.SaturationMax <= 1) {
		v.errorf(at+"saturationMax", "%v is outside (0, 1]", b.SaturationMax)
	}
	if !(b.SmoothingFactor > 0 && b.SmoothingFactor <= 1) {
		v.errorf(at+"smoothingFactor", "%v is outside (0, 1]", b.SmoothingFactor)
	}
	v.positive(at+"sampleWindow", b.SampleWindow)
	// In front mode minLimit has no effect (a warning, effect.go), so it
	// contradicts nothing there.
	if !v.front && b.Enabled && s.MaxConcurrentRequests > 0 && s.MaxConcurrentRequests < b.MinLimit {
		v.errorf("server.maxConcurrentRequests", "%d is less than backpressure.minLimit (%d): the ceiling would be below the floor", s.MaxConcurrentRequests, b.MinLimit)
	}
}

func (v *validator) admin(a *Admin) {
	if a.Listen == AdminOff {
		return
	}
	if a.Listen == "" {
		v.errorf("admin.listen", "must not be empty (write %q to disable the admin listener)", AdminOff)
		return
	}
	if err := checkHostPort("admin.listen", a.Listen, true); err != nil {
		v.errorf("admin.listen", "%v (or %q to disable)", err, AdminOff)
	}
	for i, h := range a.AllowedHosts {
		if !allowedHost(h) {
			v.errorf(fmt.Sprintf("admin.allowedHosts[%d]", i), "%q is not a host name or IP address (no port, scheme or path), or \"*\"", h)
		}
	}
}

// allowedHost reports whether h is "*", an IP address (IPv6 with or
// without brackets) or a host name.
func allowedHost(h string) bool {
	if h == "*" {
		return true
	}
	if _, err := netip.ParseAddr(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")); err == nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for _, c := range h {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

func (v *validator) workers(w *Workers) {
	const at = "workers."
	if len(w.Command) == 0 || w.Command[0] == "" {
		v.errorf(at+"command", "must name the program to run (here, or after -- on the sluice serve command line)")
	}
	if w.Count < 0 {
		v.errorf(at+"count", "%d is not a positive whole number or \"auto\"", w.Count)
	}
	v.concurrency(at, w.Concurrency, w.MaxConcurrency)
	for _, k := range sortedKeys(w.Env) {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			v.errorf(at+"env."+k, "%q is not an environment variable name", k)
		} else if strings.IndexByte(w.Env[k], 0) >= 0 {
			v.errorf(at+"env."+k, "the value must not contain a NUL byte")
		}
	}
	switch w.Address {
	case AddressPort, AddressUnix:
	default:
		v.errorf(at+"address", "%q is not an address mode (want port or unix)", w.Address)
	}
	switch w.Roll {
	case RollSurge, RollReplace:
	default:
		v.errorf(at+"roll", "%q is not a rolling restart mode (want surge or replace)", w.Roll)
	}
	v.urlPath(at+"readyPath", w.ReadyPath, true)
	v.positive(at+"startTimeout", w.StartTimeout)
	v.urlPath(at+"warmupPath", w.WarmupPath, true)
	if w.SlowStart < 0 {
		v.errorf(at+"slowStart", "%v is negative", w.SlowStart)
	}
	v.positive(at+"restartBackoff.initial", w.RestartBackoff.Initial)
	if w.RestartBackoff.Max < w.RestartBackoff.Initial {
		v.errorf(at+"restartBackoff.max", "%v is less than initial (%v)", w.RestartBackoff.Max, w.RestartBackoff.Initial)
	}
	v.positive(at+"crashLoop.window", w.CrashLoop.Window)
	v.atLeast(at+"poison.after", w.Poison.After, 1)
	v.positive(at+"poison.window", w.Poison.Window)
	v.positive(at+"poison.quarantine", w.Poison.Quarantine)
	if w.Poison.MaxQuarantine < w.Poison.Quarantine {
		v.errorf(at+"poison.maxQuarantine", "%v is less than quarantine (%v)", w.Poison.MaxQuarantine, w.Poison.Quarantine)
	}
}

// concurrency checks a concurrency and its adaptive maximum; at ends in ".".
func (v *validator) concurrency(at string, c Concurrency, maxConcurrency int) {
	if c < 0 {
		v.errorf(at+"concurrency", "%d is not a positive whole number or \"auto\"", c)
		return
	}
	if c.Auto() {
		v.atLeast(at+"maxConcurrency", maxConcurrency, 1)
		return
	}
	// A flag wins over the file: what it makes moot is only a warning.
	if flag := v.byFlag[at+"concurrency"]; flag != "" && v.set(at+"maxConcurrency") {
		v.warns = append(v.warns, &Error{File: v.file, Line: v.line(at + "maxConcurrency"), Path: at + "maxConcurrency", Warning: true,
			Msg: fmt.Sprintf("has no effect: %s %d fixes each worker's concurrency", flag, c)})
		return
	}
	// Two keys side by side that cannot both hold: the file contradicts
	// itself, unlike a key the mode leaves unused (a warning, effect.go).
	if v.set(at + "maxConcurrency") {
		v.errorf(at+"maxConcurrency", "has no effect with a fixed concurrency (%d): write concurrency: auto to have sluice find the limit up to maxConcurrency, or remove maxConcurrency", c)
	}
}

func (v *validator) upstreams(u *Upstreams) {
	const at = "upstreams."
	if len(u.Servers) == 0 {
		v.errorf(at+"servers", "must list at least one server")
	}
	for i, s := range u.Servers {
		p := fmt.Sprintf("%sservers[%d]", at, i)
		if sock, ok := strings.CutPrefix(s.Address, "unix:"); ok {
			if sock == "" {
				v.errorf(p+".address", "%q has no socket path", s.Address)
			}
		} else if err := checkHostPort("", s.Address, false); err != nil {
			v.errorf(p+".address", "%v (or unix:/path/to.sock)", err)
		}
		v.concurrency(p+".", s.Concurrency, s.MaxConcurrency)
	}
	h := &u.HealthCheck
	v.urlPath(at+"healthCheck.path", h.Path, true)
	v.positive(at+"healthCheck.interval", h.Interval)
	v.positive(at+"healthCheck.timeout", h.Timeout)
	v.atLeast(at+"healthCheck.fails", h.Fails, 1)
	v.atLeast(at+"healthCheck.passes", h.Passes, 1)
}

func (v *validator) proxy(c *Config) {
	p := c.Proxy.PingPath
	v.urlPath("proxy.pingPath", p, true)
	v.atLeast("proxy.maxUpgrades", c.Proxy.MaxUpgrades, 1)
	if n := c.Proxy.Lookahead; n < 0 || n > MaxLookahead {
		v.errorf("proxy.lookahead", "%d must be in 0..%d (0: only to workers below their limit)", n, MaxLookahead)
	}
	v.atLeast("proxy.maxHeaderFields", c.Proxy.MaxHeaderFields, 1)
	v.atLeast("proxy.maxStreams", c.Proxy.MaxStreams, 1)
	if s := c.Proxy.SaturationMax; !(s > 0 && s <= 1) {
		v.errorf("proxy.saturationMax", "%v is outside (0, 1]", s)
	}
	if p != "" && (p == c.Server.HealthPath || p == c.Server.ReadyPath) {
		v.errorf("proxy.pingPath", "%q is also server.healthPath or server.readyPath", p)
	}
}

func (v *validator) overload(o *Overload) {
	if s := o.PriorityMinShare; s < 0 || s >= 1 {
		v.errorf("overload.priorityMinShare", "%v is outside [0, 1)", s)
	}
	v.positive("overload.codel.target", o.CoDel.Target)
	v.positive("overload.codel.interval", o.CoDel.Interval)
	if o.CoDel.Target > 0 && o.CoDel.Target >= o.CoDel.Interval {
		v.errorf("overload.codel.target", "%v is not shorter than interval (%v)", o.CoDel.Target, o.CoDel.Interval)
	}
}

func (v *validator) tenants(t *Tenants) {
	const at = "tenants."
	switch kind, name, _ := strings.Cut(t.Key, ":"); {
	case t.Key == "" || t.Key == "clientIP":
	case (kind == "header" || kind == "cookie") && isToken(name):
	default:
		v.errorf(at+"key", "%q is not a tenant key (want \"\", header:NAME, cookie:NAME or clientIP)", t.Key)
	}
	for _, name := range sortedKeys(t.Weights) {
		w := t.Weights[name]
		if name == "" {
			v.errorf(at+"weights", "a tenant name must not be empty")
		} else if !(w > 0) || math.IsInf(w, 0) {
			v.errorf(at+"weights."+name, "%v must be a positive number", w)
		}
	}
	v.atLeast(at+"maxTracked", t.MaxTracked, 1)
	if t.Quota != nil {
		v.tenantQuota(t.Quota)
	}
}

func (v *validator) route(at string, r *Route) {
	m := &r.Match
	if m.Method != "" && (!isToken(m.Method) || strings.ToUpper(m.Method) != m.Method) {
		v.errorf(at+".match.method", "%q is not an upper-case HTTP method (methods are case-sensitive)", m.Method)
	}
	v.urlPath(at+".match.pathPrefix", m.PathPrefix, true)
	if m.Header != "" {
		name, _, _ := strings.Cut(m.Header, ":")
		if !isToken(strings.TrimSpace(name)) {
			shown := strconv.Quote(m.Header)
			if f := strings.Fields(name); len(f) > 0 && secretName(f[0]) {
				shown = "the value (not shown: " + f[0] + " values are secrets)"
			}
			v.errorf(at+".match.header", "%s is not \"Name: value\" or \"Name\"", shown)
		}
	}
	if _, err := admission.ParsePriority(r.Priority); err != nil {
		v.errorf(at+".priority", "%q is not a priority (want %s)", r.Priority, priorityList())
	}
	v.atLeast(at+".cost", r.Cost, 1)
	v.routeQuota(at, r)
	if f := r.Fallback; f != nil {
		if f.Status < 200 || f.Status > 599 {
			v.errorf(at+".fallback.status", "%d is not an HTTP status from 200 to 599", f.Status)
		}
		if f.Body != "" && f.File != "" {
			v.errorf(at+".fallback.file", "body and file are both set: the fallback's body comes from one")
		}
		if kind, name, ok := strings.Cut(f.Props, ":"); f.Props != "" && (!ok || (kind != "query" && kind != "header") || name == "") {
			v.errorf(at+".fallback.props", "%q is not \"query:NAME\" or \"header:NAME\"", f.Props)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
