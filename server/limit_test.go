package server_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"testing/synctest"

	"github.com/sluicehq/sluice/server"
)

// A connection accepted while MaxConnections are open is closed unread;
// once one closes, the next is served.
func TestMaxConnections(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newPipeListener()
		s := &server.Server{MaxConnections: 2, DrainDelay: -1}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, l) }()

		// roundTrip sends a request on c and reports whether it was
		// answered.
		roundTrip := func(c net.Conn) bool {
			go io.WriteString(c, "GET / HTTP/1.1\r\nHost: sluice\r\n\r\n")
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return false
			}
			resp.Body.Close()
			return resp.StatusCode == 404
		}
		dial := func() net.Conn {
			c, err := l.dial(t.Context(), "", "")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			return c
		}
		a, b := dial(), dial()
		if !roundTrip(a) || !roundTrip(b) {
			t.Fatal("connections under the limit were not served")
		}
		over := dial()
		if roundTrip(over) {
			t.Error("connection over the limit was served")
		}
		synctest.Wait()
		if got, want := s.Conns(), (server.ConnStats{Open: 2, Refused: 1}); got != want {
			t.Errorf("at the limit: got %+v, want %+v", got, want)
		}

		a.Close()
		synctest.Wait()
		if !roundTrip(dial()) {
			t.Error("connection after one closed was not served")
		}
		if got, want := s.Conns(), (server.ConnStats{Open: 2, Refused: 1}); got != want {
			t.Errorf("after one closed and one opened: got %+v, want %+v", got, want)
		}

		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: got %v, want nil", err)
		}
		if got := s.Conns().Open; got != 0 {
			t.Errorf("open after the drain: got %d, want 0", got)
		}
	})
}
