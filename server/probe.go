package server

import (
	"io"
	"net/http"
	"strconv"
)

// connKey is the context key of the request's *countedConn.
type connKey struct{}

// front answers the probes and hands every other request to Handler, but
// on a connection accepted for probes only.
func (s *Server) front(c config, rs *runState) http.Handler {
	next := s.Handler
	if next == nil {
		next = http.NotFoundHandler()
	}
	ready := s.Ready
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.send > 0 {
			sw := newSendWriter(w, c.send)
			defer sw.end()
			w = sw
		}
		cc, _ := r.Context().Value(connKey{}).(*countedConn)
		// Only an HTTP/1.x connection's wait for its next request may be
		// parked (HTTP/2's reader waits for frames).
		if cc != nil && cc.park != nil && r.ProtoMajor == 1 && !cc.http1.Load() {
			cc.http1.Store(true)
		}
		if cc != nil && cc.client.probeOnly {
			// One answer per connection beyond the limit: it must not
			// sit idle in the reserve.
			w.Header().Set("Connection", "close")
		}
		switch r.URL.Path {
		case c.health:
			probe(w, r, http.StatusOK, "ok")
			return
		case c.ready:
			if rs.draining.Load() || (ready != nil && !ready()) {
				probe(w, r, http.StatusServiceUnavailable, "not ready")
			} else {
				probe(w, r, http.StatusOK, "ready")
			}
			return
		}
		if cc != nil && cc.client.probeOnly {
			w.Header().Set("Retry-After", "1")
			http.Error(w, "connection limit reached", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// probe writes a probe's answer: a short text body that no cache keeps.
func probe(w http.ResponseWriter, r *http.Request, code int, body string) {
	h := w.Header()
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	if r.Method != http.MethodHead {
		io.WriteString(w, body)
	}
}
