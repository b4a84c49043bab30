package admission

import (
	"fmt"
	"math"
	"net"
	"net/http"
	"net/netip"
	"path"
	"strconv"
	"strings"
	"time"
)

// The request headers sluice reads from trusted peers and forwards
// downstream, and the response header that names a shed reason.
const (
	HeaderPriority = "Sluice-Priority" // critical-plus | critical | sheddable-plus | sheddable
	HeaderTenant   = "Sluice-Tenant"   // the fairness key
	HeaderTimeout  = "Sluice-Timeout"  // remaining budget in milliseconds
	HeaderShed     = "Sluice-Shed"     // on shed responses: the Reason

	// HeaderPrefix begins every sluice header. A request's headers with it
	// are believed only from trusted peers.
	HeaderPrefix = "Sluice-"
)

// MaxTenantKey bounds the tenant keys a Classifier takes from requests, in
// bytes; a longer key is cut to its first MaxTenantKey bytes. A key is part
// of the queue's bookkeeping, so its size is bounded like everything else
// that clients control; a classifier of another protocol cuts its keys the
// same way.
const MaxTenantKey = 128

// ApplyTrusted returns the priority and timeout of a request from a trusted
// peer, given those its Rule assigned (p, and timeout, zero for none) and
// the values of the peer's Sluice-Priority and Sluice-Timeout headers (""
// when absent). A priority (see ParsePriority) replaces p. A timeout is the
// milliseconds left of the caller's budget, a positive integer: it shortens
// timeout and never lengthens it, so a caller cannot outlast the Rule. A
// value that does not parse is ignored, as if absent.
//
// Classifier calls it for requests from TrustedPeers; a classifier of
// another protocol (gRPC metadata) calls it so that the same values mean
// the same. It must not be called for an untrusted peer: the values would
// raise the caller's own priority.
func ApplyTrusted(p Priority, timeout time.Duration, priority, budget string) (Priority, time.Duration) {
	if priority != "" {
		if q, err := ParsePriority(priority); err == nil {
			p = q
		}
	}
	if budget != "" {
		// Zero is no budget a sender sends (client and proxy send at
		// least 1), and read as "none" it would lift the Rule's timeout.
		if ms, err := strconv.ParseInt(budget, 10, 64); err == nil && ms > 0 && ms <= math.MaxInt64/int64(time.Millisecond) {
			if d := time.Duration(ms) * time.Millisecond; timeout <= 0 || d < timeout {
				timeout = d
			}
		}
	}
	return p, timeout
}

// Rule assigns a class, cost and timeout to the requests it matches. The
// zero Rule matches every request and assigns Critical, cost 1.
type Rule struct {
	Method string // "" matches any method
	// PathPrefix, when set, must be a prefix of the request's path, cleaned
	// and compared without regard to ASCII case (see MatchPathPrefix).
	PathPrefix string
	// Header, when set, must be present; with HeaderValue it must equal it.
	Header      string
	HeaderValue string

	Priority Priority
	Cost     int
	// Timeout bounds the whole request from its arrival; zero means none.
	Timeout time.Duration
	// Quota names the rate limit its requests are counted under
	// (Request.Quota); "" the default one.
	Quota string
}

func (r *Rule) matches(req *http.Request, path string) bool {
	if r.Method != "" && r.Method != req.Method {
		return false
	}
	if r.PathPrefix != "" && !hasPrefixFold(path, r.PathPrefix) {
		return false
	}
	if r.Header != "" {
		vs, ok := req.Header[http.CanonicalHeaderKey(r.Header)]
		if !ok || (r.HeaderValue != "" && (len(vs) == 0 || vs[0] != r.HeaderValue)) {
			return false
		}
	}
	return true
}

// TenantKey says where a request's tenant comes from.
type TenantKey struct {
	Kind TenantKind
	Name string // the header or cookie name
}

// TenantKind is a source of tenant keys.
type TenantKind uint8

const (
	TenantNone     TenantKind = iota // every request shares one tenant
	TenantHeader                     // a request header (Sluice-* headers, also spelled Sluice_*, from trusted peers only)
	TenantCookie                     // a cookie
	TenantClientIP                   // the client address (X-Forwarded-For only from trusted proxies)
)

// ParseTenantKey parses "", "header:NAME", "cookie:NAME" or "clientIP".
func ParseTenantKey(s string) (TenantKey, error) {
	kind, name, _ := strings.Cut(s, ":")
	switch {
	case s == "":
		return TenantKey{}, nil
	case s == "clientIP":
		return TenantKey{Kind: TenantClientIP}, nil
	case kind == "header" && name != "":
		return TenantKey{Kind: TenantHeader, Name: http.CanonicalHeaderKey(name)}, nil
	case kind == "cookie" && name != "":
		return TenantKey{Kind: TenantCookie, Name: name}, nil
	}
	return TenantKey{}, fmt.Errorf("admission: tenant key %q: want \"\", header:NAME, cookie:NAME or clientIP", s)
}

// MatchPathPrefix reports whether prefix matches the URL path p as a Rule's
// PathPrefix does. p is cleaned first, as a server resolving it would:
// repeated slashes collapse and "." and ".." segments are resolved
// ("//api/x" and "/api/../api/x" are "/api/x"; a trailing slash is kept).
// p is the decoded path (net/url's URL.Path), so percent-encoding
// ("/%61pi/x") has been undone already. The comparison ignores ASCII case
// ("/API/x" matches "/api"): many workers route without regard to case
// (Express does by default), and a request that reaches the same handler
// must not escape the route that classifies it. So routes cannot tell
// "/api" from "/API" apart: write one route for both.
func MatchPathPrefix(prefix, p string) bool { return hasPrefixFold(CleanPath(p), prefix) }

// CleanPath returns p cleaned for matching (see MatchPathPrefix). It does
// not allocate when p is clean already.
func CleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	if !strings.Contains(p, "//") && !strings.Contains(p, "/.") {
		return p
	}
	c := path.Clean(p)
	if c != "/" && strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c
}

// IsSluiceHeader reports whether the header named k is a Sluice-* header
// in any case, "_" read as "-" as CGI-style servers read it: one believed
// from trusted peers only. A TenantHeader it names is read only from
// TrustedPeers; so is a gRPC metadata key it names ("sluice-tenant").
func IsSluiceHeader(k string) bool {
	if len(k) < len(HeaderPrefix) {
		return false
	}
	for i := range len(HeaderPrefix) {
		c := k[i]
		if c == '_' {
			c = '-'
		}
		if c|0x20 != HeaderPrefix[i]|0x20 {
			return false
		}
	}
	return true
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Classifier maps HTTP requests to admission Requests: by its Rules, and by
// the Sluice-Priority, Sluice-Tenant and Sluice-Timeout headers only when
// the peer is trusted, so that a client cannot raise its own priority,
// borrow another tenant's share or stretch its deadline. The zero value
// trusts nobody, has no rules and no tenants. Safe for concurrent use once
// built; do not modify it after first use.
//
// Two lists, because two different things are trusted. A load balancer in
// front of sluice is trusted to say who the client is (X-Forwarded-For),
// not to vouch for what the client asks: put it in TrustedProxies only,
// and a client behind it still cannot send Sluice-Priority: critical-plus.
// TrustedPeers are callers that classify on sluice's behalf (services
// that propagate priority and deadline, a gateway that strips these
// headers from its own clients' requests).
type Classifier struct {
	// TrustedPeers are the networks whose Sluice-Priority, Sluice-Tenant
	// and Sluice-Timeout headers are believed: the peer is the socket's
	// address, never one named in a header.
	TrustedPeers []netip.Prefix
	// TrustedProxies are the networks whose X-Forwarded-For is believed
	// when finding the client's address (ClientIP, TenantClientIP): load
	// balancers and reverse proxies in front of sluice.
	TrustedProxies []netip.Prefix
	// Rules are tried in order; the first match decides.
	Rules []Rule
	// Tenant is where the tenant key comes from.
	Tenant TenantKey
	// Now returns the current time; nil means time.Now.
	Now func() time.Time
}

// Classify returns r's admission Request.
func (c *Classifier) Classify(r *http.Request) Request {
	var req Request
	var timeout time.Duration
	if i := c.Match(r); i >= 0 {
		rule := &c.Rules[i]
		req.Priority, req.Cost, timeout, req.Quota = rule.Priority, rule.Cost, rule.Timeout, rule.Quota
	}
	peer := peerAddr(r)
	trusted := contains(c.TrustedPeers, peer)
	if trusted {
		req.Priority, timeout = ApplyTrusted(req.Priority, timeout, r.Header.Get(HeaderPriority), r.Header.Get(HeaderTimeout))
	}
	if timeout > 0 {
		now := time.Now
		if c.Now != nil {
			now = c.Now
		}
		req.Deadline = now().Add(timeout)
	}
	req.Tenant = c.tenant(r, peer, trusted)
	return req
}

// Match returns the index in Rules of the first rule r matches (path
// cleaned, as Classify matches), or -1: for what else belongs to a route,
// such as the fallback sluice serves for it.
func (c *Classifier) Match(r *http.Request) int {
	p := CleanPath(r.URL.Path)
	for i := range c.Rules {
		if c.Rules[i].matches(r, p) {
			return i
		}
	}
	return -1
}

func (c *Classifier) tenant(r *http.Request, peer netip.Addr, trusted bool) string {
	var key string
	switch c.Tenant.Kind {
	case TenantHeader:
		if trusted || !IsSluiceHeader(c.Tenant.Name) {
			key = r.Header.Get(c.Tenant.Name)
		}
	case TenantCookie:
		if ck, err := r.Cookie(c.Tenant.Name); err == nil {
			key = ck.Value
		}
	case TenantClientIP:
		if ip := c.ClientIP(r); ip.IsValid() {
			key = ip.String()
		}
	}
	if len(key) > MaxTenantKey {
		key = key[:MaxTenantKey]
	}
	return key
}

// ClientIP returns the address of the client: the peer, or, when the peer is
// a trusted proxy, the rightmost X-Forwarded-For address that is not itself
// a trusted proxy.
func (c *Classifier) ClientIP(r *http.Request) netip.Addr {
	ip := peerAddr(r)
	if !contains(c.TrustedProxies, ip) {
		return ip
	}
	hops := r.Header.Values("X-Forwarded-For")
	for i := len(hops) - 1; i >= 0; i-- {
		parts := strings.Split(hops[i], ",")
		for j := len(parts) - 1; j >= 0; j-- {
			a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
			if err != nil {
				return ip
			}
			ip = a.Unmap()
			if !contains(c.TrustedProxies, ip) {
				return ip
			}
		}
	}
	return ip
}

// Trusted reports whether r comes straight from a trusted peer: whether its
// Sluice-* headers are believed.
func (c *Classifier) Trusted(r *http.Request) bool { return contains(c.TrustedPeers, peerAddr(r)) }

// TrustedProxy reports whether r comes straight from a trusted proxy:
// whether its X-Forwarded-* headers are believed.
func (c *Classifier) TrustedProxy(r *http.Request) bool {
	return contains(c.TrustedProxies, peerAddr(r))
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

func peerAddr(r *http.Request) netip.Addr {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return ip.Unmap()
}
