package attack

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// smuggleWorker is an upstream that records every request it receives and
// stamps each response with the request's number, so that a test can match
// what reached the worker against what the client was answered.
type smuggleWorker struct {
	mu   sync.Mutex
	next int
	seen []seenRequest
}

type seenRequest struct {
	id           int
	method, path string
	body         string
	header       http.Header
}

func (w *smuggleWorker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	w.mu.Lock()
	w.next++
	id := w.next
	w.seen = append(w.seen, seenRequest{id: id, method: r.Method, path: r.URL.Path, body: string(b), header: r.Header.Clone()})
	w.mu.Unlock()
	rw.Header().Set("X-Req-Id", strconv.Itoa(id))
	io.WriteString(rw, "ok")
}

// take returns the requests received since the last take.
func (w *smuggleWorker) take() []seenRequest {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.seen
	w.seen = nil
	return s
}

// exchange writes raw on a new connection to addr, then reads responses
// until sluice closes the connection (raw's last request asks it to, or
// sluice refuses the connection's framing and closes it, or the short
// request timeout of the config ends a request left incomplete). It
// returns each response's status and X-Req-Id (0 for sluice's own).
func exchange(t *testing.T, addr, raw string) (codes, ids []int) {
	t.Helper()
	c := Dial(t, addr)
	c.SetDeadline(time.Now().Add(bound))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	br := bufio.NewReader(c)
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("no end of the exchange within %v", bound)
			}
			return codes, ids
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		id, _ := strconv.Atoi(resp.Header.Get("X-Req-Id"))
		codes, ids = append(codes, resp.StatusCode), append(ids, id)
	}
}

// The request smuggling vectors, sent raw to a built sluice in front of a
// worker that counts what it receives. Sluice parses with net/http, then
// sends each request it parsed on its own, framed by Content-Length with
// Transfer-Encoding, Upgrade and the other hop-by-hop headers removed. So
// the worker must receive exactly the requests whose answers the client
// got, each once, with the body sluice parsed; and a request whose
// framing is ambiguous never reaches it at all.
func TestSmugglingVectors(t *testing.T) {
	w := &smuggleWorker{}
	s := Start(t, `server: {listen: {{listen}}, drainDelay: 0s, requestTimeout: 2s, headersTimeout: 2s}
admin: {listen: {{admin}}}
`+Upstream(t, w, 4))
	const last = "GET /last HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"
	tests := []struct {
		name string
		raw  string
		// want is what the worker must receive, "METHOD path body" each,
		// in order; nil means nothing.
		want []string
		// first is the status of the first response.
		first int
	}{
		{"baseline: pipelined", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello" + last,
			[]string{"POST /a hello", "GET /last "}, 200},
		// net/http takes the chunked framing and drops the length; sluice
		// closes the connection after the answer, so the tail is never
		// read as a request (RFC 9112 section 6.3).
		{"CL.TE", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 6\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n" + last,
			[]string{"POST /a "}, 200},
		{"TE.CL", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n29\r\nGET /smuggled HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n\r\n0\r\n\r\n" + last,
			[]string{"POST /a GET /smuggled HTTP/1.1\r\nHost: a\r\nX: 1\r\n\r\n"}, 200},
		{"duplicate Content-Length", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\nhelloGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n" + last,
			nil, 400},
		{"Content-Length list", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 40\r\n\r\nhelloGET /smuggled HTTP/1.1\r\nHost: a\r\n\r\n" + last,
			nil, 400},
		{"Content-Length with a sign", "POST /a HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\nhello" + last, nil, 400},
		{"space before the colon", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding : chunked\r\nContent-Length: 5\r\n\r\nhello" + last, nil, 400},
		{"TE xchunked", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\nContent-Length: 5\r\n\r\nhello" + last, nil, 501},
		{"TE chunked, identity", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + last, nil, 501},
		{"TE twice", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + last, nil, 501},
		{"TE obs-fold", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\r\n chunked\r\nContent-Length: 5\r\n\r\nhello" + last, nil, 400},
		{"TE vertical tab", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding:\x0bchunked\r\n\r\n0\r\n\r\n" + last, nil, 400},
		{"TE chunked in upper case", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: CHUNKED\r\n\r\n5\r\nhello\r\n0\r\n\r\n" + last,
			[]string{"POST /a hello"}, 200},
		{"TE on HTTP/1.0", "POST /a HTTP/1.0\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\nhello",
			[]string{"POST /a hello"}, 200},
		{"chunk size overflow", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffffff1\r\nhello\r\n0\r\n\r\n" + last, nil, 400},
		{"chunk with bare LF", "POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\n0\n\n" + last, nil, 400},
		{"h2c upgrade", "GET /a HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n" + last,
			[]string{"GET /a ", "GET /last "}, 200},
		{"h2c upgrade with a body", "POST /a HTTP/1.1\r\nHost: a\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\nContent-Length: 5\r\n\r\nhello" + last,
			[]string{"POST /a hello", "GET /last "}, 200},
		{"websocket upgrade then a request", "GET /ws HTTP/1.1\r\nHost: a\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" + last,
			[]string{"GET /ws ", "GET /last "}, 200},
		{"h2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", nil, 400},
		{"CONNECT", "CONNECT a:443 HTTP/1.1\r\nHost: a:443\r\n\r\n" + last, nil, 405},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w.take()
			codes, ids := exchange(t, s.Addr, tt.raw)
			got := w.take()
			var summary []string
			var gotIDs []int
			for _, r := range got {
				summary = append(summary, r.method+" "+r.path+" "+r.body)
				gotIDs = append(gotIDs, r.id)
				for _, h := range []string{"Transfer-Encoding", "Upgrade", "Http2-Settings", "Connection"} {
					// A WebSocket upgrade is passed to the worker as it is,
					// on a connection of its own; what matters is that the
					// request after a declined one arrives on its own.
					if r.path == "/ws" && (h == "Upgrade" || h == "Connection") {
						continue
					}
					if v := r.header.Values(h); len(v) > 0 {
						t.Errorf("%s %s reached the worker with %s: %q", r.method, r.path, h, v)
					}
				}
				if cl := r.header.Get("Content-Length"); cl != "" && cl != strconv.Itoa(len(r.body)) {
					t.Errorf("%s %s reached the worker with Content-Length %s and a body of %d bytes", r.method, r.path, cl, len(r.body))
				}
			}
			if !slices.Equal(summary, tt.want) {
				t.Errorf("the worker received %q, want %q", summary, tt.want)
			}
			// Every request the worker received was answered to the
			// client, in order, and nothing else came from the worker.
			var answered []int
			for _, id := range ids {
				if id != 0 {
					answered = append(answered, id)
				}
			}
			if !slices.Equal(answered, gotIDs) {
				t.Errorf("the client was answered for worker requests %v, the worker received %v", answered, gotIDs)
			}
			first := 0
			if len(codes) > 0 {
				first = codes[0]
			}
			if first != tt.first {
				t.Errorf("first response: got %d, want %d (all: %v)", first, tt.first, codes)
			}
			for _, r := range got {
				if strings.Contains(r.path, "smuggled") {
					t.Errorf("a smuggled request reached the worker: %s %s", r.method, r.path)
				}
			}
		})
	}
	s.Stop(t)
}
