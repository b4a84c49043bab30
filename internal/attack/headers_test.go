package attack

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// targetRecorder is an upstream that answers 200 and keeps the request
// target and headers of each request it got, as a worker sees them.
type targetRecorder struct {
	mu      sync.Mutex
	targets []string
	headers []http.Header
}

func (h *targetRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.targets = append(h.targets, r.RequestURI)
	h.headers = append(h.headers, r.Header.Clone())
	h.mu.Unlock()
}

// take returns and forgets what the worker got.
func (h *targetRecorder) take() ([]string, []http.Header) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, hd := h.targets, h.headers
	h.targets, h.headers = nil, nil
	return t, hd
}

// A client's underscore spellings of the headers sluice strips or sets
// (X_Forwarded_For, Sluice_Tenant, Transfer_Encoding), which a CGI or
// WSGI worker reads as the real ones, never reach the worker, nor do the
// client-address and rewrite headers CDNs set (CF-Connecting-IP,
// X-Original-URL); the request is served without them.
func TestUnderscoreAndCDNHeadersStripped(t *testing.T) {
	rec := &targetRecorder{}
	s := Start(t, "server: {listen: {{listen}}, drainDelay: 0s}\nadmin: {listen: {{admin}}}\ntenants: {key: \"header:X-Tenant\"}\n"+Upstream(t, rec, 1))
	spoof := []string{
		"X_Forwarded_For", "X_Real_IP", "X_Forwarded_Proto", "X_Forwarded_Host",
		"Sluice_Priority", "Sluice_Tenant", "Sluice_Timeout", "X_Tenant",
		"CF-Connecting-IP", "Fastly-Client-IP", "True-Client-IP", "X-Client-IP",
		"X-Cluster-Client-IP", "X-Original-URL", "X-Rewrite-URL",
	}
	var raw strings.Builder
	raw.WriteString("GET /x HTTP/1.1\r\nHost: front.example\r\n")
	for _, k := range spoof {
		raw.WriteString(k + ": 203.0.113.66\r\n")
	}
	raw.WriteString("Transfer_Encoding: chunked\r\nConnection: close\r\n\r\n")
	c := Dial(t, s.Addr)
	if code, _ := RoundTrip(t, c, raw.String()); code != http.StatusOK {
		t.Fatalf("got %d, want 200", code)
	}
	c.Close()
	_, got := rec.take()
	if len(got) != 1 {
		t.Fatalf("the worker got %d requests, want 1", len(got))
	}
	for k, vv := range got[0] {
		if strings.ContainsRune(k, '_') || strings.Contains(strings.Join(vv, ","), "203.0.113.66") {
			t.Errorf("the worker got %s: %q", k, vv)
		}
	}
	if xff := got[0].Get("X-Forwarded-For"); xff != "127.0.0.1" {
		t.Errorf("the worker got X-Forwarded-For %q, want the client's address", xff)
	}
	s.Stop(t)
}

// The attack trial's paths, classified as /static/ (critical-plus, cost
// 1) while Express serves them as /api/*, are refused before a route is
// matched; an encoded letter reaches the worker decoded, so that it
// routes the path the classifier matched.
func TestPathClassifiedIsForwarded(t *testing.T) {
	rec := &targetRecorder{}
	s := Start(t, `
server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
routes:
  - match: {pathPrefix: /static/}
    priority: critical-plus
  - match: {pathPrefix: /api/}
    priority: sheddable
    cost: 4
`+Upstream(t, rec, 1))
	for _, tt := range []struct {
		target   string
		code     int
		forward  string // the target the worker gets
		priority string // the route's, as the worker is told
	}{
		{"/api/../static/x", 400, "", ""},
		{"/api/%2e%2e/static/x", 400, "", ""},
		{"/api/..%2fstatic/x", 400, "", ""},
		{"/api/..%5cstatic/x", 400, "", ""},
		{"/api/..;/static/x", 400, "", ""},
		{"/api//../static/x", 400, "", ""},
		{"/%73tatic/x", 200, "/static/x", "critical-plus"},
		{"/%61pi/x?q=/../static", 200, "/api/x?q=/../static", "sheddable"},
	} {
		t.Run(tt.target, func(t *testing.T) {
			c := Dial(t, s.Addr)
			code, _ := RoundTrip(t, c, "GET "+tt.target+" HTTP/1.1\r\nHost: front.example\r\nConnection: close\r\n\r\n")
			c.Close()
			if code != tt.code {
				t.Fatalf("got %d, want %d", code, tt.code)
			}
			targets, headers := rec.take()
			if tt.code != http.StatusOK {
				if len(targets) > 0 {
					t.Errorf("refused, yet the worker got %q", targets)
				}
				return
			}
			if len(targets) != 1 || targets[0] != tt.forward {
				t.Fatalf("the worker got %q, want %q", targets, tt.forward)
			}
			if got := headers[0].Get("Sluice-Priority"); got != tt.priority {
				t.Errorf("the worker was told priority %q, want %q", got, tt.priority)
			}
		})
	}
	s.Stop(t)
}

// An HTTP/2 :method with a space would reach the worker as the request
// line "GET /x /echo HTTP/1.1", and a :path query with one as another
// split line: both are refused (400) and never forwarded.
func TestHTTP2MethodAndQueryNotTokens(t *testing.T) {
	lines, upstream := rawUpstream(t)
	s := Start(t, "server: {listen: {{listen}}, drainDelay: 0s, h2c: true}\nadmin: {listen: {{admin}}}\n"+upstream)
	cases := []struct {
		method, path string
		want         string
		line         string // the request line the worker gets, if any
	}{
		{"GET /x", "/echo", "400", ""},
		{"GET\t/x", "/echo", "400", ""},
		{"GET", "/echo?a=b HTTP/1.1", "400", ""},
		{"GET", "/echo", "200", "GET /echo HTTP/1.1"},
		{"GET", "/echo x", "200", "GET /echo%20x HTTP/1.1"}, // a path is written escaped
	}
	c := Dial(t, s.Addr)
	c.SetDeadline(time.Now().Add(bound))
	fr := http2.NewFramer(c, c)
	if _, err := c.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	for i, tt := range cases {
		var buf bytes.Buffer
		enc := hpack.NewEncoder(&buf)
		for _, f := range []hpack.HeaderField{
			{Name: ":method", Value: tt.method}, {Name: ":scheme", Value: "http"},
			{Name: ":authority", Value: "sluice"}, {Name: ":path", Value: tt.path},
		} {
			enc.WriteField(f)
		}
		if err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: uint32(2*i + 1), BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true}); err != nil {
			t.Fatalf("writing stream %d: %v", 2*i+1, err)
		}
	}
	// Read until every stream has its response headers (or a reset).
	got := map[uint32]string{}
	dec := hpack.NewDecoder(4096, nil)
	for len(got) < len(cases) {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatalf("reading: %v (statuses so far %v)", err, got)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				fr.WriteSettingsAck()
			}
		case *http2.HeadersFrame:
			fields, err := dec.DecodeFull(f.HeaderBlockFragment())
			if err != nil {
				t.Fatal(err)
			}
			for _, hf := range fields {
				if hf.Name == ":status" {
					got[f.StreamID] = hf.Value
				}
			}
		case *http2.RSTStreamFrame:
			got[f.StreamID] = "reset " + f.ErrCode.String()
		case *http2.GoAwayFrame:
			t.Fatalf("GOAWAY %v (statuses so far %v)", f.ErrCode, got)
		}
	}
	for i, tt := range cases {
		if st := got[uint32(2*i+1)]; st != tt.want {
			t.Errorf(":method %q :path %q: got status %q, want %s", tt.method, tt.path, st, tt.want)
		}
	}
	var want []string
	for _, tt := range cases {
		if tt.line != "" {
			want = append(want, tt.line)
		}
	}
	forwarded := lines()
	slices.Sort(forwarded) // the streams are served in any order
	slices.Sort(want)
	if !slices.Equal(forwarded, want) {
		t.Errorf("the worker got the request lines %q, want %q", forwarded, want)
	}
	c.Close()
	s.Stop(t)
}

// rawUpstream is a worker that reads requests without a body as bytes,
// answers each 200, and keeps their request lines as they came (a Go
// worker would refuse a malformed one itself; Node's parser is more
// lenient). It returns a function that reads the lines so far, and an
// upstreams section for Start's config.
func rawUpstream(t *testing.T) (lines func() []string, config string) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // guards got and conns
	var got []string
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					mu.Lock()
					got = append(got, strings.TrimRight(line, "\r\n"))
					mu.Unlock()
					for { // the header fields, to the blank line
						l, err := br.ReadString('\n')
						if err != nil {
							return
						}
						if l == "\r\n" || l == "\n" {
							break
						}
					}
					if _, err := io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"); err != nil {
						return
					}
				}
			})
		}
	})
	lines = func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}
	return lines, fmt.Sprintf("upstreams:\n  servers:\n    - address: %s\n      concurrency: 1\n", ln.Addr())
}

// A request with 1,000 header fields (small enough for
// server.maxHeaderBytes) is answered 431 and never reaches the worker.
func TestManyHeaderFieldsRefused(t *testing.T) {
	rec := &targetRecorder{}
	s := Start(t, "server: {listen: {{listen}}, drainDelay: 0s}\nadmin: {listen: {{admin}}}\n"+Upstream(t, rec, 1))
	for _, tt := range []struct {
		fields int
		want   int
	}{{90, 200}, {1000, 431}} {
		raw := "GET /x HTTP/1.1\r\nHost: front.example\r\n" + strings.Repeat("A: b\r\n", tt.fields) + "Connection: close\r\n\r\n"
		c := Dial(t, s.Addr)
		code, _ := RoundTrip(t, c, raw)
		c.Close()
		if code != tt.want {
			t.Errorf("%d fields: got %d, want %d", tt.fields, code, tt.want)
		}
		if targets, _ := rec.take(); (len(targets) > 0) != (tt.want == http.StatusOK) {
			t.Errorf("%d fields: the worker got %d requests", tt.fields, len(targets))
		}
	}
	s.Stop(t)
}

// pprof is off by default; turned on, it answers a loopback Host only, so
// that a DNS rebinding page cannot read goroutine stacks or the command
// line. /metrics and /stats answer any Host (a scrape by address).
func TestAdminPprofOffAndHostGuarded(t *testing.T) {
	get := func(t *testing.T, addr, path, host string) int {
		t.Helper()
		c := Dial(t, addr)
		code, _ := RoundTrip(t, c, "GET "+path+" HTTP/1.1\r\nHost: "+host+"\r\nConnection: close\r\n\r\n")
		c.Close()
		return code
	}
	t.Run("default", func(t *testing.T) {
		s := Start(t, "server: {listen: {{listen}}, drainDelay: 0s}\nadmin: {listen: {{admin}}}\n"+DemoWorkers(1))
		if code := get(t, s.Admin, "/debug/pprof/cmdline", "127.0.0.1"); code != http.StatusNotFound {
			t.Errorf("pprof by default: got %d, want 404", code)
		}
		s.Stop(t)
	})
	t.Run("on", func(t *testing.T) {
		s := Start(t, "server: {listen: {{listen}}, drainDelay: 0s}\nadmin: {listen: {{admin}}, pprof: true}\n"+DemoWorkers(1))
		for _, tt := range []struct {
			path, host string
			want       int
		}{
			{"/debug/pprof/cmdline", "127.0.0.1", 200},
			{"/debug/pprof/cmdline", "rebind.example", 403},
			{"/debug/pprof/goroutine?debug=2", "rebind.example:9090", 403},
			{"/metrics", "rebind.example", 200},
			{"/stats", "rebind.example", 200},
		} {
			if code := get(t, s.Admin, tt.path, tt.host); code != tt.want {
				t.Errorf("GET %s Host %s: got %d, want %d", tt.path, tt.host, code, tt.want)
			}
		}
		s.Stop(t)
	})
}
