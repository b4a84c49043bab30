package config

import (
	"net"
	"net/netip"
	"strings"
)

// Values that turn a safety off are valid (a test rig, a trusted network,
// a proxy in front that already bounds the same thing), so they are
// accepted, but never silently: each is a warning at sluice validate and
// in the log at start, like a key that has no effect (effect.go), and
// sluice validate --strict refuses them. A key already reported as having
// no effect is not reported again: turning off what does nothing is no
// risk.
//
// A default is never unsafe, so, as for effects, only keys the file writes
// are reported.
func (v *validator) safety(c *Config) {
	const risk = unsafePrefix
	s := &c.Server
	if s.KeepAliveTimeout == 0 {
		v.warnf(c, "server.keepAliveTimeout", risk+"0 keeps idle keep-alive connections open forever, so idle clients can hold every connection")
	}
	if s.RequestTimeout == 0 {
		v.warnf(c, "server.requestTimeout", risk+"0 lets a client take forever to send its request body (a slow-body attack holds a connection and its buffer)")
		if s.HeadersTimeout == 0 {
			v.warnf(c, "server.headersTimeout", risk+"0 with requestTimeout 0 lets a client take forever to send its headers (slowloris)")
		}
	}
	if s.MaxConnections == 0 {
		v.warnf(c, "server.maxConnections", risk+"0 accepts connections without bound, until file descriptors or memory run out")
	}
	if s.SendTimeout == 0 {
		v.warnf(c, "server.sendTimeout", risk+"0 lets a client that stops reading its response hold the connection, and a streamed response's worker, forever")
	}
	if !s.Backpressure.Enabled && !c.FrontMode() && s.MaxConcurrentRequests == 0 {
		v.warnf(c, "server.maxConcurrentRequests", risk+"0 with backpressure off leaves requests in flight without any limit")
	}
	if s.Backpressure.Enabled && s.Backpressure.QueueSize != 0 && s.Backpressure.QueueTimeout == 0 && !c.Overload.CoDel.Enabled {
		v.warnf(c, "server.backpressure.queueTimeout", risk+"0 with CoDel off lets a request wait in the queue without bound (only its own deadline, if any, ends the wait)")
	}
	// In library mode these two are reported as having no effect (their
	// mode tag), which is checked first.
	if c.Proxy.Timeout == 0 {
		v.warnf(c, "proxy.timeout", risk+"0 lets a worker that never answers hold its slot and the client forever")
	}
	if c.Proxy.MaxBodyBytes == 0 {
		v.warnf(c, "proxy.maxBodyBytes", risk+"0 accepts request bodies of any size")
	}
	if c.Admin.Enabled() && c.Admin.PProf && !loopbackListen(c.Admin.Listen) {
		v.warnf(c, "admin.listen", risk+"the admin listener binds beyond loopback with admin.pprof on: profiles, goroutine stacks and the command line are open to the network (set admin.pprof: false, or listen on 127.0.0.1)")
	}
	for i, h := range c.Admin.AllowedHosts {
		if h == "*" {
			v.warnf(c, "admin.allowedHosts", risk+"\"*\" (item %d) accepts POST /workers/restart whatever the Host header, so a DNS rebinding page can reach it", i)
		}
	}
}

const unsafePrefix = "disables a safety: "

// Unsafe reports whether e is a warning for a value that disables a
// safety, rather than for a key that has no effect.
func (e *Error) Unsafe() bool { return e.Warning && strings.HasPrefix(e.Msg, unsafePrefix) }

// loopbackListen reports whether a host:port listen address binds loopback
// only: 127.0.0.0/8, ::1 or localhost. An empty host binds every interface.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}
