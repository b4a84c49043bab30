package proxy_test

// Pass-through over real loopback sockets: upgrades, trailers, 1xx, and
// the fallbacks for a failed or erring worker. Every wait is bounded.

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/textproto"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// newPassFront starts a worker of Concurrency 1 serving h, and a Proxy
// front for it.
func newPassFront(t *testing.T, o proxy.Options, h http.Handler) (*proxy.Proxy, *httptest.Server) {
	t.Helper()
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(admission.MaxLimit), SampleWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	o.Controller = c
	p, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	worker := httptest.NewServer(h)
	front := httptest.NewServer(p)
	p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: worker.Listener.Addr().String(), Concurrency: 1})
	t.Cleanup(func() {
		p.CloseUpgrades()
		front.Close()
		worker.Close()
		p.CloseIdleConnections()
		c.Close()
	})
	return p, front
}

// echoWorker switches /ws to the "echo" protocol, in which every line is
// sent back; anything else is answered "page".
func echoWorker() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "echo" {
			io.WriteString(w, "page")
			return
		}
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			return
		}
		defer conn.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
		for {
			line, err := brw.ReadString('\n')
			if err != nil {
				return
			}
			brw.WriteString(line)
			brw.Flush()
		}
	})
}

// dialUpgrade asks front to switch to echo and returns the connection
// with the response's status.
func dialUpgrade(t *testing.T, front *httptest.Server) (net.Conn, *bufio.Reader, int) {
	t.Helper()
	conn, err := net.DialTimeout("tcp", front.Listener.Addr().String(), liveWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(liveWait))
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		resp.Body.Close()
	}
	return conn, br, resp.StatusCode
}

func echo(t *testing.T, conn net.Conn, br *bufio.Reader, msg string) {
	t.Helper()
	io.WriteString(conn, msg+"\n")
	got, err := br.ReadString('\n')
	if err != nil || got != msg+"\n" {
		t.Fatalf("echo: got %q, %v; want %q", got, err, msg+"\n")
	}
}

// Upgraded connections are relayed both ways and hold no worker slot: with
// three open on a worker of Concurrency 1, a page is still served.
func TestUpgradeEchoHoldsNoSlot(t *testing.T) {
	p, front := newPassFront(t, proxy.Options{}, echoWorker())
	type ws struct {
		c  net.Conn
		br *bufio.Reader
	}
	var open []ws
	for i := range 3 {
		c, br, code := dialUpgrade(t, front)
		if code != http.StatusSwitchingProtocols {
			t.Fatalf("upgrade %d: got %d, want 101", i, code)
		}
		echo(t, c, br, "hello")
		open = append(open, ws{c, br})
	}
	client := front.Client()
	client.Timeout = liveWait
	resp, err := client.Get(front.URL + "/page")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "page" {
		t.Fatalf("page beside the upgrades: got %d %q, want 200 page", resp.StatusCode, body)
	}
	st := p.Stats()
	if st.Upgrades != 3 || st.UpgradesTotal != 3 || st.Outstanding != 0 {
		t.Fatalf("stats: got upgrades %d, total %d, slots in use %d; want 3, 3, 0", st.Upgrades, st.UpgradesTotal, st.Outstanding)
	}
	for _, w := range open {
		echo(t, w.c, w.br, "again")
	}
	// Closing the client's side ends the relay.
	open[0].c.Close()
	deadline := time.Now().Add(liveWait)
	for p.Stats().Upgrades != 2 {
		if time.Now().After(deadline) {
			t.Fatalf("upgrades open after a client closed: got %d, want 2", p.Stats().Upgrades)
		}
		time.Sleep(time.Millisecond) // polling a counter, bounded
	}
}

// Past MaxUpgrades an upgrade is answered 503; CloseUpgrades closes the
// open ones and refuses new ones.
func TestUpgradeBound(t *testing.T) {
	p, front := newPassFront(t, proxy.Options{MaxUpgrades: 1}, echoWorker())
	c, br, code := dialUpgrade(t, front)
	if code != http.StatusSwitchingProtocols {
		t.Fatalf("first upgrade: got %d, want 101", code)
	}
	if _, _, code := dialUpgrade(t, front); code != http.StatusServiceUnavailable {
		t.Fatalf("upgrade past the bound: got %d, want 503", code)
	}
	if st := p.Stats(); st.UpgradesRefused != 1 || st.MaxUpgrades != 1 {
		t.Fatalf("stats: got refused %d, max %d; want 1, 1", st.UpgradesRefused, st.MaxUpgrades)
	}
	echo(t, c, br, "still open")
	if n := p.CloseUpgrades(); n != 1 {
		t.Fatalf("CloseUpgrades: got %d closed, want 1", n)
	}
	if _, err := br.ReadString('\n'); err == nil {
		t.Fatal("upgraded connection still open after CloseUpgrades")
	}
	if _, _, code := dialUpgrade(t, front); code != http.StatusServiceUnavailable {
		t.Fatalf("upgrade after CloseUpgrades: got %d, want 503", code)
	}
}

// A worker that declines the upgrade has its answer relayed.
func TestUpgradeDeclined(t *testing.T) {
	_, front := newPassFront(t, proxy.Options{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Upgrade", "other")
		http.Error(w, "no", http.StatusUpgradeRequired)
	}))
	if _, _, code := dialUpgrade(t, front); code != http.StatusUpgradeRequired {
		t.Fatalf("declined upgrade: got %d, want 426", code)
	}
}

// Trailers reach the client, announced or not, whether the response was
// streamed (the worker flushes and waits) or taken whole.
func TestTrailersRelayed(t *testing.T) {
	gate := make(chan struct{})
	_, front := newPassFront(t, proxy.Options{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", "X-Checksum")
		io.WriteString(w, "part one;")
		if r.URL.Path == "/stream" {
			w.(http.Flusher).Flush()
			<-gate
		}
		io.WriteString(w, "part two")
		w.Header().Set("X-Checksum", "abc")
		w.Header().Set(http.TrailerPrefix+"X-Unannounced", "late")
	}))
	client := front.Client()
	client.Timeout = liveWait
	for _, path := range []string{"/whole", "/stream"} {
		t.Run(path, func(t *testing.T) {
			resp, err := client.Get(front.URL + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if path == "/stream" {
				buf := make([]byte, len("part one;"))
				if _, err := io.ReadFull(resp.Body, buf); err != nil {
					t.Fatal(err)
				}
				close(gate)
			}
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatal(err)
			}
			if got := resp.Trailer.Get("X-Checksum"); got != "abc" {
				t.Errorf("trailer X-Checksum: got %q, want abc", got)
			}
			if got := resp.Trailer.Get("X-Unannounced"); got != "late" {
				t.Errorf("trailer X-Unannounced: got %q, want late", got)
			}
		})
	}
}

// A 103 Early Hints reaches the client before the final response: the
// worker sends its 200 only once the client has seen the 103.
func TestEarlyHintsBeforeFinal(t *testing.T) {
	seen := make(chan struct{})
	_, front := newPassFront(t, proxy.Options{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Link", "</app.css>; rel=preload")
		w.WriteHeader(http.StatusEarlyHints)
		select {
		case <-seen:
		case <-time.After(liveWait):
		}
		w.Header().Del("Link")
		io.WriteString(w, "page")
	}))
	var hints []string
	trace := &httptrace.ClientTrace{Got1xxResponse: func(code int, h textproto.MIMEHeader) error {
		if code == http.StatusEarlyHints {
			hints = append(hints, h.Get("Link"))
			close(seen)
		}
		return nil
	}}
	req, _ := http.NewRequest("GET", front.URL+"/", nil)
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), trace))
	client := front.Client()
	client.Timeout = liveWait
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if len(hints) != 1 || hints[0] != "</app.css>; rel=preload" {
		t.Fatalf("103 hints: got %q, want one Link", hints)
	}
	if resp.StatusCode != 200 || string(body) != "page" || resp.Header.Get("Link") != "" {
		t.Fatalf("final: got %d %q Link %q, want 200 page and no Link", resp.StatusCode, body, resp.Header.Get("Link"))
	}
	if time.Since(start) >= liveWait {
		t.Fatal("the worker never learnt the 103 arrived: it was held until the final response")
	}
}

// A worker that fails (502) or answers 5xx gets its route's fallback: on
// a failure always, on a 5xx only when the fallback opts in.
func TestFallbackOnWorkerFailure(t *testing.T) {
	worker := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/die" {
			c, _, _ := http.NewResponseController(w).Hijack()
			c.Close()
			return
		}
		http.Error(w, "render failed", http.StatusInternalServerError)
	})
	for _, tc := range []struct {
		name, path    string
		onWorkerError bool
		fallback      bool
		wantCode      int
		wantKind      string
		wantBody      string
	}{
		{"502 without fallback", "/die", false, false, 502, "", "Bad Gateway\n"},
		{"502", "/die", false, true, 200, "bad-gateway", "shell"},
		{"5xx not opted in", "/err", false, true, 500, "", "render failed\n"},
		{"5xx opted in", "/err", true, true, 200, "worker-error", "shell"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := proxy.Options{}
			if tc.fallback {
				o.Fallbacks = []proxy.Fallback{{PathPrefix: "/", Body: []byte("shell"), OnWorkerError: tc.onWorkerError}}
			}
			_, front := newPassFront(t, o, worker)
			client := front.Client()
			client.Timeout = liveWait
			resp, err := client.Get(front.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != tc.wantCode || string(body) != tc.wantBody || resp.Header.Get(proxy.HeaderFallback) != tc.wantKind {
				t.Fatalf("got %d %q fallback %q, want %d %q fallback %q", resp.StatusCode, body,
					resp.Header.Get(proxy.HeaderFallback), tc.wantCode, tc.wantBody, tc.wantKind)
			}
			if tc.wantKind == "worker-error" && resp.Header.Get(proxy.HeaderWorkerStatus) != "500" {
				t.Errorf("%s: got %q, want 500", proxy.HeaderWorkerStatus, resp.Header.Get(proxy.HeaderWorkerStatus))
			}
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/") {
				t.Errorf("Content-Type: got %q", resp.Header.Get("Content-Type"))
			}
		})
	}
}

// A fallback that takes props carries them from the request into its
// body as a string literal that cannot end the <script> it is in, and
// that reads back as the value sent.
func TestFallbackProps(t *testing.T) {
	const shell = `<script id="p">var raw = {{sluice.props}};</script>`
	die := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, _, _ := http.NewResponseController(w).Hijack()
		c.Close()
	})
	for _, tc := range []struct {
		name, props, query string
		header             string
		want               any // the literal, decoded; nil for null
	}{
		{name: "query", props: "query:props", query: "?props=" + url.QueryEscape(`{"name":"</script><script>alert(1)</script>"}`),
			want: `{"name":"</script><script>alert(1)</script>"}`},
		{name: "header", props: "header:X-Props", header: "{\"a\":\"it's \u2028 <!-- \\\"\"}", want: "{\"a\":\"it's \u2028 <!-- \\\"\"}"},
		{name: "absent", props: "query:props", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := proxy.Options{Fallbacks: []proxy.Fallback{{PathPrefix: "/", Body: []byte(shell), Props: tc.props}}}
			_, front := newPassFront(t, o, die)
			req, _ := http.NewRequest("GET", front.URL+"/page"+tc.query, nil)
			if tc.header != "" {
				req.Header.Set("X-Props", tc.header)
			}
			client := front.Client()
			client.Timeout = liveWait
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			lit, ok := strings.CutPrefix(string(body), `<script id="p">var raw = `)
			lit, ok2 := strings.CutSuffix(lit, ";</script>")
			if !ok || !ok2 || strings.ContainsAny(lit, "<>&'\u2028") {
				t.Fatalf("body %q: the props are not one safe literal in place of the placeholder", body)
			}
			if resp.Header.Get("Content-Length") != strconv.Itoa(len(body)) {
				t.Errorf("Content-Length %q for %d bytes", resp.Header.Get("Content-Length"), len(body))
			}
			var got any
			if err := json.Unmarshal([]byte(lit), &got); err != nil || got != tc.want {
				t.Fatalf("literal %s reads back as %q (%v), want %q", lit, got, err, tc.want)
			}
		})
	}
}

func TestFallbackPropsValidate(t *testing.T) {
	for _, tc := range []struct {
		props string
		ok    bool
	}{{"", true}, {"query:props", true}, {"header:X-Props", true}, {"query:", false}, {"cookie:p", false}, {"props", false}} {
		c, _ := admission.New(admission.Options{})
		_, err := proxy.New(proxy.Options{Controller: c, Fallbacks: []proxy.Fallback{{PathPrefix: "/", Props: tc.props}}})
		if (err == nil) != tc.ok {
			t.Errorf("Props %q: got %v, want ok %v", tc.props, err, tc.ok)
		}
		c.Close()
	}
}

// An upgrade carries the request's ID and arrival time to the worker like
// any request, in place of the client's.
func TestUpgradeCarriesRequestInfo(t *testing.T) {
	got := make(chan http.Header, 1)
	p, _ := newPassFront(t, proxy.Options{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		http.Error(w, "no", http.StatusUpgradeRequired)
	}))
	infos := make(chan *reqinfo.Info, 1)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, info := reqinfo.New(r.Context(), time.Now(), "", "", false)
		p.ServeHTTP(w, r.WithContext(ctx))
		infos <- info
	}))
	defer front.Close()
	conn, err := net.DialTimeout("tcp", front.Listener.Addr().String(), liveWait)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(liveWait))
	io.WriteString(conn, "GET /ws HTTP/1.1\r\nHost: app\r\nConnection: Upgrade\r\nUpgrade: echo\r\nX-Request-Id: forged\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	h, info := <-got, <-infos
	if id := h.Get("X-Request-Id"); id == "" || id == "forged" || id != info.ID {
		t.Errorf("worker got X-Request-Id %q, want the request's %q", id, info.ID)
	}
	if h.Get("X-Request-Start") == "" {
		t.Error("worker got no X-Request-Start")
	}
	if info.Worker != 1 {
		t.Errorf("the record's worker: got %d, want 1", info.Worker)
	}
}
