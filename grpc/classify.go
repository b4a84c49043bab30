package sluicegrpc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"

	"github.com/sluicehq/sluice/admission"
)

// The metadata sluice reads from trusted peers (ClientInterceptor sends
// sluice-priority; grpc-go carries the deadline itself, as grpc-timeout),
// and the trailers of a shed call: admission's header names
// (admission.HeaderPriority, ...) in lower case, as gRPC metadata keys are.
const (
	MetadataPriority = "sluice-priority" // critical-plus | critical | sheddable-plus | sheddable
	MetadataTenant   = "sluice-tenant"   // the fairness key
	MetadataTimeout  = "sluice-timeout"  // remaining budget in milliseconds
	TrailerShed      = "sluice-shed"     // on shed calls: the admission.Reason
	// TrailerPushback is gRFC A6's server pushback: the milliseconds a
	// client's retry policy waits before its next attempt.
	TrailerPushback = "grpc-retry-pushback-ms"
)

// Rule assigns a class, cost and timeout to the calls it matches. The zero
// Rule matches every call and assigns Critical, cost 1.
type Rule struct {
	// Method is a full method name, "/package.Service/Method", or a
	// service, "/package.Service/", matching all its methods. "" matches
	// every call.
	Method string

	Priority admission.Priority
	Cost     int
	// Timeout bounds the call from its arrival; zero means none beyond the
	// caller's own deadline.
	Timeout time.Duration
}

func (r *Rule) matches(fullMethod string) bool {
	if strings.HasSuffix(r.Method, "/") {
		return strings.HasPrefix(fullMethod, r.Method)
	}
	return r.Method == "" || r.Method == fullMethod
}

// Classifier maps gRPC calls to admission Requests: by its Rules, by the
// call's deadline, and by the sluice-priority, sluice-timeout and sluice-*
// tenant metadata only when the peer is trusted, so that a caller cannot
// raise its own priority, borrow another tenant's share or outlast a
// Rule's Timeout. The zero value trusts nobody, has no rules and no tenants,
// and takes each call's deadline from its context. Safe for concurrent use
// once built; do not modify it after first use.
type Classifier struct {
	// TrustedPeers are the networks whose sluice-* metadata is believed:
	// the peer is the connection's address, never one named in metadata.
	TrustedPeers []netip.Prefix
	// Rules are tried in order; the first match decides.
	Rules []Rule
	// Tenant is where the tenant key comes from: admission.TenantHeader
	// names a metadata key (case does not matter; a key beginning with
	// "sluice-" or "sluice_" only from trusted peers, as
	// admission.IsSluiceHeader says), admission.TenantClientIP is the
	// peer's address. admission.TenantCookie has no meaning here.
	Tenant admission.TenantKey
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Validate reports every field whose value makes no sense, or nil.
func (c *Classifier) Validate() error {
	var errs []error
	for i, r := range c.Rules {
		if r.Method != "" && !strings.HasPrefix(r.Method, "/") {
			errs = append(errs, fmt.Errorf("sluicegrpc: Classifier.Rules[%d].Method = %q: want \"/package.Service/Method\", \"/package.Service/\" or \"\"", i, r.Method))
		}
		if r.Timeout < 0 {
			errs = append(errs, fmt.Errorf("sluicegrpc: Classifier.Rules[%d].Timeout = %v: must be >= 0", i, r.Timeout))
		}
	}
	switch c.Tenant.Kind {
	case admission.TenantNone, admission.TenantClientIP:
	case admission.TenantHeader:
		if c.Tenant.Name == "" {
			errs = append(errs, errors.New("sluicegrpc: Classifier.Tenant: a metadata key needs a name"))
		}
	default:
		errs = append(errs, fmt.Errorf("sluicegrpc: Classifier.Tenant.Kind = %d: want none, a metadata key (TenantHeader) or the peer's address (TenantClientIP)", c.Tenant.Kind))
	}
	return errors.Join(errs...)
}

// Classify returns the admission Request of the call to fullMethod whose
// server-side context is ctx.
func (c *Classifier) Classify(ctx context.Context, fullMethod string) admission.Request {
	var req admission.Request
	var timeout time.Duration
	for i := range c.Rules {
		if rule := &c.Rules[i]; rule.matches(fullMethod) {
			req.Priority, req.Cost, timeout = rule.Priority, rule.Cost, rule.Timeout
			break
		}
	}
	addr := peerAddr(ctx)
	trusted := contains(c.TrustedPeers, addr)
	if trusted {
		req.Priority, timeout = admission.ApplyTrusted(req.Priority, timeout, first(ctx, MetadataPriority), first(ctx, MetadataTimeout))
	}
	if timeout > 0 {
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		req.Deadline = now().Add(timeout)
	}
	// The caller's own deadline is believed from anyone: it can only get
	// the call shed sooner, never served sooner.
	if d, ok := ctx.Deadline(); ok && (req.Deadline.IsZero() || d.Before(req.Deadline)) {
		req.Deadline = d
	}
	req.Tenant = c.tenant(ctx, addr, trusted)
	return req
}

func (c *Classifier) tenant(ctx context.Context, addr netip.Addr, trusted bool) string {
	var key string
	switch c.Tenant.Kind {
	case admission.TenantHeader:
		if trusted || !admission.IsSluiceHeader(c.Tenant.Name) {
			key = first(ctx, strings.ToLower(c.Tenant.Name))
		}
	case admission.TenantClientIP:
		if addr.IsValid() {
			key = addr.String()
		}
	}
	if len(key) > admission.MaxTenantKey {
		key = key[:admission.MaxTenantKey]
	}
	return key
}

// Trusted reports whether the call whose server-side context is ctx comes
// straight from a trusted peer: whether its sluice-* metadata is believed.
func (c *Classifier) Trusted(ctx context.Context) bool {
	return contains(c.TrustedPeers, peerAddr(ctx))
}

// first returns the first value of the incoming metadata key, which must be
// lower case. It reads only that key: metadata.FromIncomingContext would
// copy all of them.
func first(ctx context.Context, key string) string {
	if vs := metadata.ValueFromIncomingContext(ctx, key); len(vs) > 0 {
		return vs[0]
	}
	return ""
}

func contains(nets []netip.Prefix, ip netip.Addr) bool {
	if !ip.IsValid() {
		return false
	}
	for _, p := range nets {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// peerAddr returns the IP address of the call's peer, or the zero Addr when
// there is none (no peer, or a Unix socket).
func peerAddr(ctx context.Context) netip.Addr {
	p, ok := peer.FromContext(ctx)
	if !ok || p.Addr == nil {
		return netip.Addr{}
	}
	if a, ok := p.Addr.(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	ap, err := netip.ParseAddrPort(p.Addr.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap()
}
