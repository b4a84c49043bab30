package testutil_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// An HTTP server and client over a Network in a synctest bubble: the
// handler's sleep passes on the bubble's clock, at once.
func TestNetworkServesHTTPInABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n testutil.Network
		l := n.Listen("backend:80")
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(time.Hour)
			io.WriteString(w, "late")
		})}
		go srv.Serve(l)
		defer srv.Close()
		tr := &http.Transport{DialContext: n.Dial}
		defer tr.CloseIdleConnections()
		start := time.Now()
		resp, err := (&http.Client{Transport: tr}).Get("http://backend/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "late" || time.Since(start) != time.Hour {
			t.Errorf("got %q after %v, want \"late\" after 1h of the bubble's clock", body, time.Since(start))
		}
	})
}

// A dial to no listener, or to a closed one, is refused as a real one is.
func TestNetworkRefuses(t *testing.T) {
	var n testutil.Network
	if _, err := n.Dial(context.Background(), "tcp", "nowhere"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial to no listener: got %v, want ECONNREFUSED", err)
	}
	l := n.Listen("a")
	if l.Closed() {
		t.Error("Closed before Close: got true")
	}
	l.Close()
	if !l.Closed() {
		t.Error("Closed after Close: got false")
	}
	if _, err := n.Dial(context.Background(), "tcp", "a"); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial to a closed listener: got %v, want ECONNREFUSED", err)
	}
	if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: got %v, want net.ErrClosed", err)
	}
	var opErr *net.OpError
	if _, err := l.Dial(context.Background(), "tcp", "a"); !errors.As(err, &opErr) || opErr.Addr.String() != "a" {
		t.Errorf("Listener.Dial after Close: got %v, want a *net.OpError for a", err)
	}
}

// Closing a listener that another replaced at its address leaves the new
// one reachable.
func TestNetworkListenReplaces(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n testutil.Network
		old := n.Listen("a")
		l := n.Listen("a")
		old.Close()
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Close()
			}
		}()
		c, err := n.Dial(context.Background(), "tcp", "a")
		if err != nil {
			t.Fatalf("dial after the old listener closed: %v", err)
		}
		c.Close()
		l.Close()
	})
}

// A listener of its own is reached through its Dial, whatever the address.
func TestNewListener(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := testutil.NewListener()
		accepted := make(chan net.Conn, 1)
		go func() {
			c, err := l.Accept()
			if err != nil {
				t.Error(err)
			}
			accepted <- c
		}()
		c, err := l.Dial(context.Background(), "tcp", "anything:80")
		if err != nil {
			t.Fatal(err)
		}
		srv := <-accepted
		go srv.Write([]byte("hi"))
		buf := make([]byte, 2)
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != "hi" {
			t.Errorf("read %q, %v; want \"hi\"", buf, err)
		}
		c.Close()
		srv.Close()
		l.Close()
		if got := l.Addr().String(); got != "pipe" {
			t.Errorf("Addr: got %q, want pipe", got)
		}
	})
}

// A dial that nobody accepts ends with its context.
func TestListenerDialCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := testutil.NewListener()
		defer l.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if _, err := l.Dial(ctx, "tcp", ""); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("got %v, want context.DeadlineExceeded", err)
		}
	})
}
