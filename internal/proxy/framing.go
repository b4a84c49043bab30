package proxy

import "net/http"

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

// refuseFraming applies the rules above; it reports true when it has
// answered r.
func refuseFraming(w http.ResponseWriter, r *http.Request) bool {
	if r.ProtoMajor == 1 && len(r.TransferEncoding) > 0 {
		w.Header().Set("Connection", "close")
	}
	switch {
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
