package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server"
)

// limitRig serves a Server on an in-memory listener in a synctest bubble; its
// handler holds /hold requests until release is closed.
type limitRig struct {
	t       *testing.T
	l       *testutil.Listener
	s       *server.Server
	release chan struct{}
	cancel  context.CancelFunc
	done    chan error
}

func newLimitRig(t *testing.T, s *server.Server) *limitRig {
	g := &limitRig{t: t, l: testutil.NewListener(), s: s, release: make(chan struct{}), done: make(chan error, 1)}
	s.DrainDelay = -1
	s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-g.release
		}
		io.WriteString(w, "served")
	})
	ctx, cancel := context.WithCancel(t.Context())
	g.cancel = cancel
	go func() { g.done <- s.Serve(ctx, g.l) }()
	return g
}

func (g *limitRig) dial() net.Conn {
	c, err := g.l.Dial(g.t.Context(), "", "")
	if err != nil {
		g.t.Fatal(err)
	}
	g.t.Cleanup(func() { c.Close() })
	return c
}

// roundTrip sends GET path on c and returns the status, 0 when the
// connection closed unanswered.
func roundTrip(c net.Conn, path string) int {
	go io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: sluice\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// hold starts GET /hold on c, which the handler keeps until release.
func hold(c net.Conn) chan int {
	code := make(chan int, 1)
	go func() { code <- roundTrip(c, "/hold") }()
	return code
}

func (g *limitRig) stop() {
	close(g.release)
	g.cancel()
	if err := <-g.done; err != nil {
		g.t.Errorf("Serve: got %v, want nil", err)
	}
	if got := g.s.Conns().Open; got != 0 {
		g.t.Errorf("open after the drain: got %d, want 0", got)
	}
}

// A connection accepted while MaxConnections are busy and
// ProbeConnections are open is closed unread; once one closes, the next is
// served.
func TestMaxConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newLimitRig(t, &server.Server{MaxConnections: 2, ProbeConnections: -1})
		a := g.dial() // silent: neither idle nor busy, so never reclaimed
		hold(g.dial())
		synctest.Wait()
		if got := roundTrip(g.dial(), "/"); got != 0 {
			t.Errorf("connection over the limit: got %d, want closed unread", got)
		}
		synctest.Wait()
		if got, want := g.s.Conns(), (server.ConnStats{Open: 2, Refused: 1}); got != want {
			t.Errorf("at the limit: got %+v, want %+v", got, want)
		}

		a.Close()
		synctest.Wait()
		if got := roundTrip(g.dial(), "/"); got != 200 {
			t.Errorf("connection after one closed: got %d, want 200", got)
		}
		g.stop()
	})
}

// At the limit a new connection takes the place of the one idle longest
// (a keep-alive parked between pings): idle connections never lock real
// work out.
func TestMaxConnectionsReclaimsIdle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newLimitRig(t, &server.Server{MaxConnections: 2, ProbeConnections: -1})
		old, younger := g.dial(), g.dial()
		for _, c := range []net.Conn{old, younger} {
			if roundTrip(c, "/ping") != 200 {
				t.Fatal("connections under the limit were not served")
			}
			synctest.Wait() // idle, in this order
		}
		if got, want := g.s.Conns(), (server.ConnStats{Open: 2, Idle: 2}); got != want {
			t.Errorf("two idle: got %+v, want %+v", got, want)
		}
		if got := roundTrip(g.dial(), "/"); got != 200 {
			t.Errorf("new connection at the limit: got %d, want 200", got)
		}
		synctest.Wait()
		if got := roundTrip(old, "/ping"); got != 0 {
			t.Errorf("longest idle: got %d, want closed", got)
		}
		if got := roundTrip(younger, "/ping"); got != 200 {
			t.Errorf("younger idle: got %d, want 200", got)
		}
		synctest.Wait()
		if got, want := g.s.Conns(), (server.ConnStats{Open: 2, Idle: 2, Reclaimed: 1}); got != want {
			t.Errorf("after the reclaim: got %+v, want %+v", got, want)
		}
		g.stop()
	})
}

// With every connection busy, the probes still answer on a connection
// beyond the limit; anything else there gets 503; beyond ProbeConnections
// connections are closed unread.
func TestProbesAnswerAtConnectionLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newLimitRig(t, &server.Server{MaxConnections: 1, ProbeConnections: 1})
		busy := hold(g.dial())
		synctest.Wait()
		for _, path := range []string{server.DefaultHealthPath, server.DefaultReadyPath} {
			// A connection beyond the limit answers once and closes, so
			// that probers do not sit in the reserve.
			c := g.dial()
			if got := roundTrip(c, path); got != 200 {
				t.Errorf("%s at the limit: got %d, want 200", path, got)
			}
			if got := roundTrip(c, path); got != 0 {
				t.Errorf("%s again on the same connection: got %d, want it closed", path, got)
			}
		}
		if got := roundTrip(g.dial(), "/"); got != 503 {
			t.Errorf("work on a connection beyond the limit: got %d, want 503", got)
		}
		synctest.Wait()
		if got, want := g.s.Conns(), (server.ConnStats{Open: 1}); got != want {
			t.Errorf("after the probes: got %+v, want %+v", got, want)
		}
		g.dial() // open, silent: neither idle nor closed
		synctest.Wait()
		if got := roundTrip(g.dial(), server.DefaultHealthPath); got != 0 {
			t.Errorf("beyond ProbeConnections: got %d, want closed unread", got)
		}
		if got := g.s.Conns().Refused; got != 1 {
			t.Errorf("refused: got %d, want 1", got)
		}
		g.stop()
		if got := <-busy; got != 200 {
			t.Errorf("busy request: got %d, want 200", got)
		}
	})
}
