package proxy

import (
	"net/http"
	"slices"
	"strconv"
)

// What a worker's response carries besides its status, header and body,
// passed on as nginx passes them: informational (1xx) responses before
// the final one, and trailers after its body.
//
// A 1xx (103 Early Hints, say) is read by the exchange's goroutine and
// written by the handler's, which waits for the final response anyway
// (await): writing to the client from two goroutines is not allowed. 100
// Continue is not passed on (sluice has read the body already, and
// answered the client's Expect itself) nor is 101, which only an upgrade
// may have (upgrade.go).
//
// Trailers are announced in the Trailer header when the worker announced
// them, and sent after the body: chunked for HTTP/1.1, a trailing HEADERS
// frame for HTTP/2. A response with trailers is never given a
// Content-Length, which would rule them out. A trailer the worker did not
// announce is sent too (http.TrailerPrefix).

// info is one informational response.
type info struct {
	code int
	h    http.Header
}

// GotInfo keeps a 1xx for the handler; the goroutine reading the
// response's header calls it (x is its call's upstream.InfoSink).
func (x *exchange) GotInfo(code int, h http.Header) {
	if code == http.StatusContinue || code == http.StatusSwitchingProtocols {
		return
	}
	if x.side == onHandler {
		// Read on the handler's goroutine (runInline): written at once.
		writeInfos(x.inlineW, []info{{code, h}})
		return
	}
	x.mu.Lock()
	if x.state == waiting {
		x.infos = append(x.infos, info{code, h})
	}
	x.mu.Unlock()
	signal(x.notify)
}

// writeInfos writes the 1xx responses to w with their own header only:
// w's header, which the final response will carry, is put aside meanwhile.
func writeInfos(w http.ResponseWriter, infos []info) {
	h := w.Header()
	saved := h.Clone()
	for _, in := range infos {
		clear(h)
		removeHopByHop(in.h)
		for k, vv := range in.h {
			h[k] = vv
		}
		w.WriteHeader(in.code)
	}
	clear(h)
	for k, vv := range saved {
		h[k] = vv
	}
}

// trailerNames returns the names in t, sorted; nil when there are none.
func trailerNames(t http.Header) []string {
	if len(t) == 0 {
		return nil
	}
	keys := make([]string, 0, len(t))
	for k := range t {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// workerErrorFallback serves r's fallback in place of x's 5xx, buffered
// whole, when the fallback asks for it (Fallback.OnWorkerError); the
// worker's response is discarded. It reports whether it did.
func (p *Proxy) workerErrorFallback(w http.ResponseWriter, r *http.Request, x *exchange) bool {
	if p.o.SelectFallback == nil {
		return false
	}
	f := p.o.SelectFallback(r)
	if f == nil || !f.OnWorkerError {
		return false
	}
	x.mu.Lock()
	for _, c := range x.chunks {
		p.dropBuf(c.buf)
	}
	x.chunks, x.pending = nil, 0
	x.mu.Unlock()
	status := strconv.Itoa(x.resp.StatusCode)
	p.serveFallback(w, r, f, "worker-error", func(h http.Header) { h.Set(HeaderWorkerStatus, status) })
	return true
}

// writeTrailers sets resp's trailers, read by now, for w to send after the
// body.
func writeTrailers(w http.ResponseWriter, resp *http.Response, announced []string) {
	h := w.Header()
	for k, vv := range resp.Trailer {
		if len(vv) == 0 {
			continue
		}
		if !slices.Contains(announced, k) {
			k = http.TrailerPrefix + k
		}
		h[k] = vv
	}
}
