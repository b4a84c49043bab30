//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// The parking tests run a Server on a real loopback listener (parking
// needs a socket) with a grace of a millisecond. ParkAbove is 1, and each
// test first opens a silent connection (x) that stays in net/http, so
// that the connections the test then opens are parked.

const (
	bound     = 10 * time.Second
	testGrace = time.Millisecond
)

type parkRig struct {
	t    *testing.T
	s    *Server
	addr string
	stop context.CancelFunc
	done chan error
}

// startPark serves s (its Handler answers the request's path) on
// 127.0.0.1:0 until the test ends.
func startPark(t *testing.T, s *Server) *parkRig {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.parkGrace = testGrace
	if s.Handler == nil {
		s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, r.URL.Path) })
	}
	ctx, cancel := context.WithCancel(context.Background())
	g := &parkRig{t: t, s: s, addr: ln.Addr().String(), stop: cancel, done: make(chan error, 1)}
	go func() { g.done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		s.Cut()
		g.wait()
	})
	return g
}

// wait returns Serve's result.
func (g *parkRig) wait() error {
	g.t.Helper()
	select {
	case err := <-g.done:
		g.done <- err
		return err
	case <-time.After(bound):
		g.t.Fatal("Serve did not return")
		return nil
	}
}

// testConn is a client connection that reads its responses in order.
type testConn struct {
	net.Conn
	br *bufio.Reader
}

func (g *parkRig) dial() *testConn {
	g.t.Helper()
	c, err := net.DialTimeout("tcp", g.addr, bound)
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(bound))
	return &testConn{Conn: c, br: bufio.NewReader(c)}
}

// get sends GET path and returns the status and body; 0 and the error's
// text when the connection closed unanswered.
func (c *testConn) get(path string) (int, string) {
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: sluice\r\n\r\n"); err != nil {
		return 0, err.Error()
	}
	return c.response()
}

func (c *testConn) response() (int, string) {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// closed reports whether the server closed c within bound.
func (c *testConn) closed() bool {
	_, err := c.br.ReadByte()
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// waitConns polls the server's counts until cond holds, failing the test
// after bound.
func (g *parkRig) waitConns(what string, cond func(ConnStats) bool) ConnStats {
	g.t.Helper()
	deadline := time.Now().Add(bound)
	for {
		st := g.s.Conns()
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("waiting for %s: last %+v", what, st)
		}
		time.Sleep(time.Millisecond) // polling: the server has no event to wait on
	}
}

// An idle keep-alive connection is parked after the grace, stays idle
// (for the connection limit) and open, and its next request is served on
// the same connection; the client's close is seen while it is parked.
func TestParkIdleKeepAlive(t *testing.T) {
	g := startPark(t, &Server{ParkAbove: 1, DrainDelay: -1})
	g.dial() // x
	a := g.dial()
	for _, path := range []string{"/one", "/two", "/three"} {
		if code, body := a.get(path); code != 200 || body != path {
			t.Fatalf("GET %s: got %d %q, want 200 %q", path, code, body, path)
		}
		st := g.waitConns("the connection parked", func(st ConnStats) bool { return st.Parked == 1 })
		if want := (ConnStats{Open: 2, Idle: 1, Parked: 1}); st != want {
			t.Errorf("after %s: got %+v, want %+v", path, st, want)
		}
	}
	a.Close()
	g.waitConns("the parked connection closed", func(st ConnStats) bool { return st == ConnStats{Open: 1} })
}

// A new connection waits for its first bytes parked, then is served; one
// that sends nothing is closed when HeadersTimeout passes, as net/http
// would close it.
func TestParkNewConnection(t *testing.T) {
	const headers = 200 * time.Millisecond
	g := startPark(t, &Server{ParkAbove: 1, HeadersTimeout: headers, DrainDelay: -1})
	g.dial()
	b := g.dial()
	g.waitConns("the new connection parked", func(st ConnStats) bool { return st == ConnStats{Open: 2, Parked: 1} })
	if code, body := b.get("/first"); code != 200 || body != "/first" {
		t.Fatalf("first request: got %d %q, want 200", code, body)
	}

	began := time.Now()
	silent := g.dial()
	if !silent.closed() {
		t.Fatal("a silent new connection was not closed")
	}
	if took := time.Since(began); took < headers {
		t.Errorf("silent connection closed after %v, before HeadersTimeout %v", took, headers)
	}
	// x too has met HeadersTimeout, in net/http; b waits parked.
	g.waitConns("the silent connections counted out", func(st ConnStats) bool { return st == ConnStats{Open: 1, Idle: 1, Parked: 1} })
}

// A parked idle connection is closed when KeepAliveTimeout passes.
func TestParkKeepAliveTimeout(t *testing.T) {
	const keepAlive = 200 * time.Millisecond
	g := startPark(t, &Server{ParkAbove: 1, KeepAliveTimeout: keepAlive, DrainDelay: -1})
	g.dial()
	a := g.dial()
	began := time.Now()
	if code, _ := a.get("/"); code != 200 {
		t.Fatalf("got %d, want 200", code)
	}
	g.waitConns("the connection parked", func(st ConnStats) bool { return st.Parked == 1 })
	if !a.closed() {
		t.Fatal("the parked connection outlived KeepAliveTimeout")
	}
	if took := time.Since(began); took < keepAlive {
		t.Errorf("closed after %v, before KeepAliveTimeout %v", took, keepAlive)
	}
	g.waitConns("the connection counted out", func(st ConnStats) bool { return st == ConnStats{Open: 1} })
}

// Bytes of the next request that net/http has already read are never left
// behind: a connection whose read buffer holds the start of a pipelined
// request is not parked, and that request is served whole.
func TestParkKeepsBufferedBytes(t *testing.T) {
	g := startPark(t, &Server{ParkAbove: 1, DrainDelay: -1})
	g.dial()
	a := g.dial()
	io.WriteString(a, "GET /one HTTP/1.1\r\nHost: sluice\r\n\r\nGE")
	if code, body := a.response(); code != 200 || body != "/one" {
		t.Fatalf("first request: got %d %q", code, body)
	}
	// Not synchronisation: the time a wrong parker would need to park it.
	time.Sleep(50 * testGrace)
	io.WriteString(a, "T /two HTTP/1.1\r\nHost: sluice\r\n\r\n")
	if code, body := a.response(); code != 200 || body != "/two" {
		t.Errorf("the request begun before the pause: got %d %q, want 200 \"/two\"", code, body)
	}
}

// The wait for the next request is given up (errParked) only when the
// read is for the whole of net/http's buffer, which then holds nothing;
// else it lasts as long as net/http asked.
func TestReadNextParksOnlyAnEmptyBuffer(t *testing.T) {
	_, sc := testutil.TCPPair(t)
	conns := &connCounter{}
	conns.open.Store(2)
	p := &parker{above: 1, grace: testGrace, conns: conns}
	s := &countedConn{Conn: sc, client: &clientConn{Conn: sc, conns: conns}}
	s.park, s.bufSize = p, 8

	// As net/http does: idle, the keep-alive deadline, the read.
	const keepAlive = 100 * time.Millisecond
	s.armed.Store(true)
	began := time.Now()
	s.SetReadDeadline(began.Add(keepAlive))
	if _, err := s.Read(make([]byte, 7)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read with bytes buffered: got %v, want the deadline's error", err)
	}
	if took := time.Since(began); took < keepAlive {
		t.Errorf("read with bytes buffered: gave up after %v, before the keep-alive deadline %v", took, keepAlive)
	}
	if s.parking.Load() {
		t.Error("read with bytes buffered: marked for parking")
	}

	s.armed.Store(true)
	s.SetReadDeadline(time.Now().Add(bound))
	if _, err := s.Read(make([]byte, 8)); err != errParked {
		t.Errorf("read with an empty buffer: got %v, want errParked", err)
	}
	if !s.parking.Load() {
		t.Error("read with an empty buffer: not marked for parking")
	}
}

// A wait that ends in time leaves the keep-alive deadline for a further
// read net/http makes before setting a deadline of its own (bytes that
// came short of its Peek).
func TestReadNextRestoresTheDeadline(t *testing.T) {
	client, sc := testutil.TCPPair(t)
	conns := &connCounter{}
	conns.open.Store(2)
	s := &countedConn{Conn: sc, client: &clientConn{Conn: sc, conns: conns}}
	s.park, s.bufSize = &parker{above: 1, grace: 50 * time.Millisecond, conns: conns}, 8

	s.armed.Store(true)
	s.SetReadDeadline(time.Now().Add(bound))
	client.Write([]byte("G"))
	if n, err := s.Read(make([]byte, 8)); n != 1 || err != nil {
		t.Fatalf("first read: got %d, %v", n, err)
	}
	go func() {
		time.Sleep(200 * time.Millisecond) // past the grace, within the keep-alive
		client.Write([]byte("ET"))
	}()
	if n, err := s.Read(make([]byte, 7)); n != 2 || err != nil {
		t.Errorf("second read, past the grace: got %d, %v, want the 2 bytes", n, err)
	}
}

// The drain's first step closes parked idle connections, as net/http
// closes its idle ones; a parked new connection that sends its request in
// the drain delay is served.
func TestParkDrain(t *testing.T) {
	g := startPark(t, &Server{ParkAbove: 1, DrainDelay: 3 * bound})
	x := g.dial()
	idle, fresh := g.dial(), g.dial()
	if code, _ := idle.get("/"); code != 200 {
		t.Fatalf("got %d, want 200", code)
	}
	g.waitConns("both parked", func(st ConnStats) bool { return st.Parked == 2 })
	g.stop()
	if !idle.closed() { // within bound, long before the drain delay ends
		t.Fatal("the parked idle connection was not closed at the drain's start")
	}
	if code, body := fresh.get("/late"); code != 200 || body != "/late" {
		t.Errorf("request on a parked new connection in the drain delay: got %d %q, want 200", code, body)
	}
	x.Close()
	g.s.Cut()
	if err := g.wait(); !errors.Is(err, ErrCut) {
		t.Errorf("Serve: got %v, want ErrCut", err)
	}
	if got := g.s.Conns(); got.Open != 0 || got.Parked != 0 {
		t.Errorf("after Serve: got %+v, want none open or parked", got)
	}
}

// At MaxConnections a parked idle connection is reclaimed like any idle
// one.
func TestParkReclaimed(t *testing.T) {
	g := startPark(t, &Server{ParkAbove: 1, MaxConnections: 2, ProbeConnections: -1, DrainDelay: -1})
	g.dial()
	a := g.dial()
	if code, _ := a.get("/"); code != 200 {
		t.Fatalf("got %d, want 200", code)
	}
	g.waitConns("parked", func(st ConnStats) bool { return st.Parked == 1 })
	// Closed after its answer: idle, it would be parked in its turn, and
	// the count of the parked would not tell that the reclaimed one left.
	n := g.dial()
	if _, err := io.WriteString(n, "GET /new HTTP/1.1\r\nHost: sluice\r\nConnection: close\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if code, _ := n.response(); code != 200 {
		t.Errorf("new connection at the limit: got %d, want 200", code)
	}
	if !a.closed() {
		t.Error("the parked idle connection was not reclaimed")
	}
	st := g.waitConns("the reclaimed one counted out", func(st ConnStats) bool { return st.Parked == 0 })
	if st.Reclaimed != 1 || st.Open > 2 {
		t.Errorf("got %+v, want 1 reclaimed and at most 2 open", st)
	}
}

// HTTPS and HTTP/2 keep-alive connections are never parked, and keep
// serving past the grace.
func TestParkNotTLSOrHTTP2(t *testing.T) {
	ts := httptest.NewUnstartedServer(nil)
	ts.EnableHTTP2 = true
	ts.StartTLS()
	cert, trusting := ts.TLS.Certificates[0], ts.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	ts.Close()
	var h2c http.Protocols
	h2c.SetUnencryptedHTTP2(true)
	tests := []struct {
		name   string
		s      *Server
		scheme string
		tr     *http.Transport
		major  int
	}{
		{"h2c", &Server{H2C: true}, "http", &http.Transport{Protocols: &h2c}, 2},
		{"HTTP/1.1 TLS", &Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}, "https",
			&http.Transport{TLSClientConfig: &tls.Config{RootCAs: trusting}}, 1},
		{"HTTP/2 TLS", &Server{TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}, "https",
			&http.Transport{TLSClientConfig: &tls.Config{RootCAs: trusting}, ForceAttemptHTTP2: true}, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.s.ParkAbove, tc.s.DrainDelay = 1, -1
			g := startPark(t, tc.s)
			g.dial()
			defer tc.tr.CloseIdleConnections()
			c := &http.Client{Transport: tc.tr, Timeout: bound}
			for i, path := range []string{"/one", "/two"} {
				resp, err := c.Get(tc.scheme + "://" + g.addr + path)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.ProtoMajor != tc.major || string(b) != path {
					t.Errorf("GET %s: got HTTP/%d %q, want HTTP/%d %q", path, resp.ProtoMajor, b, tc.major, path)
				}
				if i == 0 {
					// Not synchronisation: the time a wrong parker would
					// need to park the connection.
					time.Sleep(50 * testGrace)
				}
			}
			if st := g.s.Conns(); st.Parked != 0 || st.Open != 2 {
				t.Errorf("got %+v, want 2 open (one of them the client's, kept alive), none parked", st)
			}
		})
	}
}

// Below ParkAbove nothing is parked.
func TestParkBelowThreshold(t *testing.T) {
	g := startPark(t, &Server{ParkAbove: 2, DrainDelay: -1})
	g.dial()
	a := g.dial()
	for range 2 {
		if code, _ := a.get("/"); code != 200 {
			t.Fatalf("got %d, want 200", code)
		}
		time.Sleep(50 * testGrace) // not synchronisation: time to park it wrongly
	}
	if st := g.s.Conns(); st.Parked != 0 {
		t.Errorf("got %+v, want none parked with 2 open and ParkAbove 2", st)
	}
}

// Going idle arms the wait for the next request only on a session that
// carries HTTP/1.x and may be parked: HTTP/2's reader waits for frames,
// not for a request, and must never be cut.
func TestIdleArmsOnlyHTTP1(t *testing.T) {
	p := &parker{}
	tests := []struct {
		name  string
		park  *parker
		http1 bool
		want  bool
	}{
		{"HTTP/1.1", p, true, true},
		{"HTTP/2", p, false, false},
		{"not parked", nil, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			conns := &connCounter{}
			c := &clientConn{conns: conns}
			s := c.newSession(nil)
			s.park = tc.park
			s.http1.Store(tc.http1)
			conns.setState(s, http.StateIdle)
			if got := s.armed.Load(); got != tc.want {
				t.Errorf("armed: got %v, want %v", got, tc.want)
			}
		})
	}
}
