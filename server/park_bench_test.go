//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package server

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// benchServe serves s (answering "ok") on loopback for the benchmark and
// opens one silent connection, so that with ParkAbove 1 the benchmark's
// connections are above it.
func benchServe(b *testing.B, s *Server) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s.DrainDelay = -1
	s.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	silent, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		silent.Close()
		cancel()
		s.Cut()
		<-done
	})
	return ln.Addr().String()
}

// parkCases are the configurations compared: parking off, on but below
// its threshold (the default with few connections), above it (requests
// pay the grace's deadline), and above it with a grace so short that
// every request finds its connection parked (what a request after a pause
// of more than the grace pays).
var parkCases = []struct {
	name  string
	above int
	grace time.Duration
}{
	{"off", -1, 0},
	{"below", 0, 0},
	{"above", 1, 0},
	{"parked", 1, time.Nanosecond},
}

// What parking costs a request on a keep-alive connection: sequential
// GETs on one connection, client and server on this machine.
func BenchmarkParkKeepAlive(b *testing.B) {
	for _, pc := range parkCases {
		b.Run(pc.name, func(b *testing.B) {
			addr := benchServe(b, &Server{ParkAbove: pc.above, parkGrace: pc.grace})
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			tc := &testConn{Conn: c, br: bufio.NewReader(c)}
			b.ReportAllocs()
			defer testutil.ReportCPU(b, testutil.ProcessCPU())
			for b.Loop() {
				if code, _ := tc.get("/"); code != 200 {
					b.Fatalf("got %d", code)
				}
			}
		})
	}
}

// What parking costs a connection: dial, one GET, close.
func BenchmarkParkNewConn(b *testing.B) {
	for _, pc := range parkCases[:3] {
		b.Run(pc.name, func(b *testing.B) {
			addr := benchServe(b, &Server{ParkAbove: pc.above})
			b.ReportAllocs()
			defer testutil.ReportCPU(b, testutil.ProcessCPU())
			for b.Loop() {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				tc := &testConn{Conn: c, br: bufio.NewReader(c)}
				if code, _ := tc.get("/"); code != 200 {
					b.Fatalf("got %d", code)
				}
				c.Close()
			}
		})
	}
}
