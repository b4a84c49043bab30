package proxy

import (
	"net"
	"net/http"
	"net/textproto"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// Headers sluice sends to workers so that priority and the remaining budget
// propagate to the next hop.
const (
	HeaderPriority = "Sluice-Priority"
	HeaderTimeout  = "Sluice-Timeout"
	// HeaderFallback is set on a Fallback response to the error it replaced:
	// shed, no-worker or timeout.
	HeaderFallback = "Sluice-Fallback"
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

// outgoingHeader is the header sent to a worker for r: r's end-to-end
// headers, X-Forwarded-For with the client's address appended,
// X-Forwarded-Proto and -Host, and the request's priority.
func outgoingHeader(r *http.Request, req admission.Request) http.Header {
	h := r.Header.Clone()
	if h == nil {
		h = make(http.Header)
	}
	removeHopByHop(h)
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
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	set("X-Forwarded-Proto", proto)
	set("X-Forwarded-Host", r.Host)
	set(HeaderPriority, req.Priority.String())
	delete(h, HeaderTimeout)
	delete(h, "Expect") // the body has been read already: nothing to wait for
	if _, ok := h["User-Agent"]; !ok {
		set("User-Agent", "") // Go's transport then sends none of its own
	}
	return h
}

// setBudget tells the worker how long it has, in whole milliseconds (at
// least 1); a negative budget (none) removes the header.
func setBudget(h http.Header, budget time.Duration) {
	if budget < 0 {
		delete(h, HeaderTimeout)
		return
	}
	h[HeaderTimeout] = []string{strconv.FormatInt(max(budget.Milliseconds(), 1), 10)}
}

// copyResponseHeader copies the worker's end-to-end headers to dst.
func copyResponseHeader(dst, src http.Header) {
	removeHopByHop(src)
	for k, vv := range src {
		dst[k] = vv
	}
}
