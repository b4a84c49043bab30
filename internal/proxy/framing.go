package proxy

import (
	"net/http"
	"strings"
)

// Request framing. net/http's server already refuses most smuggling
// vectors before a handler runs: differing duplicate Content-Length
// headers, a Transfer-Encoding other than one "chunked", malformed chunk
// sizes, invalid header bytes. The Proxy then sends each request it parsed
// on its own, framed by Content-Length, with Transfer-Encoding, Upgrade and
// the other hop-by-hop headers removed, so a worker never parses a request
// differently from sluice. What remains is done here, before anything else:
//
//   - A request with both Content-Length and Transfer-Encoding: chunked is
//     accepted by net/http with the chunked framing, the length dropped
//     before the handler can see it. RFC 9112 section 6.3 requires the
//     connection to be closed after the response to such a request: a
//     balancer in front of sluice that framed it by its length would read
//     the rest as another request (CL.TE). The two cannot be told apart
//     here, so the connection of every HTTP/1.x request with a chunked body
//     is closed after its response; chunked uploads are rare, and HTTP/2
//     has no such framing.
//   - CONNECT is refused (405): sluice has no tunnel to offer, and a worker
//     asked to CONNECT would turn its connection into one.
//   - The asterisk form ("PRI * HTTP/2.0", the HTTP/2 preface sent to an
//     HTTP/1 listener, say) is only for OPTIONS (RFC 9112 section 3.2.4):
//     anything else is refused (400).
//   - A method that is not a token (RFC 9110 section 9.1) is refused
//     (400). net/http's HTTP/1 parser never yields one, but its HTTP/2
//     server passes :method on as it came: "GET /x" would reach the worker
//     as the request line "GET /x /path HTTP/1.1".
//   - A query with a space or a control character is refused (400), for
//     the same reason: an HTTP/2 :path is not split on spaces. (The path
//     is written escaped, and the Host is checked as it is written.)
//   - A request with more header fields than MaxHeaderFields is refused
//     (431): each costs the worker too, and Node.js drops, unannounced,
//     the fields past its own bound.
//   - A path a worker could read as another path than the classifier
//     does is refused (400); see path.go.

// screen applies the rules above. It returns the request to classify and
// forward (r, or a copy with its path in normal form: see normalPath),
// and false when it has answered r.
func screen(w http.ResponseWriter, r *http.Request, maxFields int) (*http.Request, bool) {
	if refuseFraming(w, r) {
		return r, false
	}
	if maxFields >= 0 {
		n := 0
		for _, vv := range r.Header {
			n += len(vv)
		}
		if n > maxFields {
			plain(w, http.StatusRequestHeaderFieldsTooLarge, "Request Header Fields Too Large\n")
			return r, false
		}
	}
	if r.RequestURI == "*" {
		return r, true // OPTIONS *: no path
	}
	e := r.URL.EscapedPath()
	p, ok := normalPath(e)
	if !ok {
		plain(w, http.StatusBadRequest, "Bad Request: the path has dot segments, empty segments or an encoded slash\n")
		return r, false
	}
	if p != e {
		// Handlers must not modify their request: a shallow copy, made
		// only for a path with an escaped unreserved character.
		r2 := new(http.Request)
		*r2 = *r
		u := *r.URL
		u.RawPath = p
		r2.URL = &u
		r = r2
	}
	return r, true
}

// refuseFraming applies the rules above but the header count's and the
// path's; it reports true when it has answered r.
func refuseFraming(w http.ResponseWriter, r *http.Request) bool {
	if r.ProtoMajor == 1 && len(r.TransferEncoding) > 0 {
		w.Header().Set("Connection", "close")
	}
	switch {
	case !isToken(r.Method), !printable(r.URL.RawQuery):
		plain(w, http.StatusBadRequest, "Bad Request\n")
		return true
	case r.Method == http.MethodConnect:
		w.Header().Set("Connection", "close")
		w.Header().Set("Allow", "GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, TRACE")
		plain(w, http.StatusMethodNotAllowed, "Method Not Allowed\n")
		return true
	case r.RequestURI == "*" && r.Method != http.MethodOptions:
		w.Header().Set("Connection", "close")
		plain(w, http.StatusBadRequest, "Bad Request\n")
		return true
	}
	return false
}

// isToken reports whether s is an RFC 9110 token: one or more of the
// letters, digits and !#$%&'*+-.^_`|~.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// printable reports whether s has no space, control character or DEL:
// whether it can stand in a request line.
func printable(s string) bool {
	for i := range len(s) {
		if c := s[i]; c <= ' ' || c == 0x7f {
			return false
		}
	}
	return true
}
