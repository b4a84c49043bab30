package proxy

import (
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/reqinfo"
)

// The headers sluice's front adds to its answers. The request headers it
// sends to workers so that priority and the remaining budget propagate to
// the next hop are admission's (admission.HeaderPriority, HeaderTimeout).
const (
	// HeaderFallback is set on a Fallback response to the error it replaced:
	// shed, no-worker, timeout, bad-gateway (the worker failed or could
	// not be reached) or worker-error (the worker answered 5xx, see
	// Fallback.OnWorkerError).
	HeaderFallback = "Sluice-Fallback"
	// HeaderWorkerStatus is set on a worker-error Fallback to the status
	// the worker answered.
	HeaderWorkerStatus = "Sluice-Worker-Status"
)

// hopHeaders are meaningful for one connection only (RFC 9110 7.6.1), in
// canonical form. Any header named in Connection, and every Proxy-*
// header, is removed as well.
var hopHeaders = []string{
	"Connection",
	"Keep-Alive",
	"Te",
	"Trailer",
	"Transfer-Encoding",
	"Upgrade",
}

// removeHopByHop deletes the hop-by-hop headers from h.
func removeHopByHop(h http.Header) {
	for _, v := range h["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if name = textproto.TrimString(name); name != "" {
				h.Del(name)
			}
		}
	}
	for _, k := range hopHeaders {
		delete(h, k)
	}
	for k := range h {
		if strings.HasPrefix(k, "Proxy-") {
			delete(h, k)
		}
	}
}

// Trust is what sluice believes of the peer a request came from (the
// socket's address, never one a header names). The zero value believes
// nothing.
type Trust struct {
	// Peer: the request's Sluice-* headers (a tenant, say) are passed on
	// to the worker. Otherwise every Sluice-* request header is removed;
	// sluice sets Sluice-Priority and Sluice-Timeout itself either way.
	Peer bool
	// Proxy: the peer is a load balancer or proxy whose X-Forwarded-For
	// chain is extended with its address, and whose X-Forwarded-Proto,
	// X-Forwarded-Host and other forwarding headers (Forwarded, X-Real-IP,
	// CF-Connecting-IP, X-Original-URL, ...: forwardingHeaders) are
	// passed on (the first two set by sluice when absent). Otherwise
	// X-Forwarded-For is the peer's address alone, X-Forwarded-Proto and
	// -Host are sluice's own (https when the connection to sluice is TLS),
	// and the other forwarding headers are removed: a client cannot name
	// itself someone else, nor the path it asked for.
	Proxy bool
}

// outgoingHeader is the header sent to a worker for r: r's end-to-end
// headers less what trust does not allow and less the names with an
// underscore (see dropUnderscore), X-Forwarded-For, X-Forwarded-Proto and
// -Host, and the request's priority.
func outgoingHeader(r *http.Request, req admission.Request, trust Trust, underscores bool) http.Header {
	// Room for what is added below and by the request's reqinfo, so that
	// the map does not grow (a few allocations) while it is filled in.
	extra := 6 // X-Forwarded-For, -Proto and -Host, Sluice-Priority and -Timeout, User-Agent
	if reqinfo.From(r.Context()) != nil {
		extra += 3 // X-Request-Id, X-Request-Start, Traceparent
	}
	h := cloneHeader(r.Header, extra)
	removeHopByHop(h)
	// Any spelling: a header map built in Go need not be canonical.
	for k := range h {
		if (strings.IndexByte(k, '_') >= 0 && dropUnderscore(k, underscores)) ||
			(!trust.Peer && hasPrefixFold(k, admission.HeaderPrefix)) || (!trust.Proxy && isForwardingHeader(k)) {
			delete(h, k)
		}
	}
	// One backing array for the values set here: one allocation, not five.
	vals := make([]string, 5)
	set := func(k, v string) {
		vals[0] = v
		h[k], vals = vals[:1:1], vals[1:]
	}
	if ip, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		if prior := h["X-Forwarded-For"]; len(prior) > 0 {
			ip = strings.Join(prior, ", ") + ", " + ip
		}
		set("X-Forwarded-For", ip)
	}
	if len(h["X-Forwarded-Proto"]) == 0 {
		proto := "http"
		if r.TLS != nil {
			proto = "https"
		}
		set("X-Forwarded-Proto", proto)
	}
	if len(h["X-Forwarded-Host"]) == 0 {
		set("X-Forwarded-Host", r.Host)
	}
	set(admission.HeaderPriority, req.Priority.String())
	delete(h, admission.HeaderTimeout)
	delete(h, "Expect") // the body has been read already: nothing to wait for
	if _, ok := h["User-Agent"]; !ok {
		set("User-Agent", "") // Go's transport then sends none of its own
	}
	return h
}

// cloneHeader is http.Header.Clone with room for extra more keys; never
// nil.
func cloneHeader(h http.Header, extra int) http.Header {
	nv := 0
	for _, vv := range h {
		nv += len(vv)
	}
	sv := make([]string, nv) // one backing array for the values, as Clone
	h2 := make(http.Header, len(h)+extra)
	for k, vv := range h {
		if vv == nil {
			h2[k] = nil // as Clone: nil and empty differ to ReverseProxy
			continue
		}
		n := copy(sv, vv)
		h2[k] = sv[:n:n]
		sv = sv[n:]
	}
	return h2
}

// forwardingHeaders name the client, how it connected or what it asked
// for before a proxy rewrote it, in canonical form; believed only from a
// trusted proxy. CDNs (Cloudflare, Fastly, Akamai) and proxies (IIS's URL
// rewrite, Symfony's and Laravel's X-Original-URL) set them, and
// frameworks read them for the client's address or the route: a client
// must not send its own. The method overrides (Express's method-override,
// Rails, Symfony) tunnel a method through a proxy that allows only GET and
// POST: honoured by the worker, they would serve a method other than the
// one sluice classified.
var forwardingHeaders = []string{
	"Forwarded",
	"X-Real-Ip",
	"X-Client-Ip",
	"True-Client-Ip",
	"Cf-Connecting-Ip",
	"Cf-Connecting-Ipv6",
	"Fastly-Client-Ip",
	"X-Cluster-Client-Ip",
	"X-Original-Url",
	"X-Rewrite-Url",
	"X-Original-Host",
	"X-Original-Forwarded-For",
	"X-Http-Method-Override",
	"X-Http-Method",
	"X-Method-Override",
}

// isForwardingHeader reports whether k, in any case, is one of
// forwardingHeaders or an X-Forwarded-* header.
func isForwardingHeader(k string) bool {
	if hasPrefixFold(k, "X-Forwarded-") {
		return true
	}
	for _, f := range forwardingHeaders {
		if strings.EqualFold(k, f) {
			return true
		}
	}
	return false
}

// ownHeaders are the request headers, beside the Sluice-* and forwarding
// ones, that sluice frames the request by or sets itself.
var ownHeaders = []string{"Content-Length", "Host", "Expect", reqinfo.HeaderRequestID, reqinfo.HeaderRequestStart, reqinfo.HeaderTraceparent}

// dropUnderscore reports whether the header named k, which has an
// underscore, is withheld from the worker. CGI, WSGI, PHP-FPM, Rack and some
// frameworks read a header by a name with "-" and "_" alike
// (HTTP_X_FORWARDED_FOR), so X_Forwarded_For would pass for the header
// sluice sets or strips. As nginx (underscores_in_headers off), every such
// name is dropped unless underscores is set; even then, one that reads as
// a header sluice strips, sets or frames by (hop-by-hop, Content-Length,
// Sluice-*, X-Forwarded-*, ...) is dropped, whatever the peer's trust: a
// trusted peer or proxy sends the real spelling.
func dropUnderscore(k string, underscores bool) bool {
	if !underscores {
		return true
	}
	if hasPrefixUnderscore(k, admission.HeaderPrefix) || hasPrefixUnderscore(k, "X-Forwarded-") || hasPrefixUnderscore(k, "Proxy-") {
		return true
	}
	for _, list := range [][]string{hopHeaders, forwardingHeaders, ownHeaders} {
		for _, name := range list {
			if len(k) == len(name) && hasPrefixUnderscore(k, name) {
				return true
			}
		}
	}
	return false
}

// hasPrefixUnderscore is hasPrefixFold with "_" in s read as "-".
func hasPrefixUnderscore(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := range len(prefix) {
		c, p := s[i], prefix[i]
		if c == '_' {
			c = '-'
		}
		if c != p && lower(c) != lower(p) {
			return false
		}
	}
	return true
}

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// setBudget tells the worker how long it has, in whole milliseconds (at
// least 1); a negative budget (none) removes the header.
func setBudget(h http.Header, budget time.Duration) {
	if budget < 0 {
		delete(h, admission.HeaderTimeout)
		return
	}
	h[admission.HeaderTimeout] = []string{strconv.FormatInt(max(budget.Milliseconds(), 1), 10)}
}

// copyResponseHeader copies the worker's end-to-end headers to dst.
func copyResponseHeader(dst, src http.Header) {
	removeHopByHop(src)
	for k, vv := range src {
		dst[k] = vv
	}
}
