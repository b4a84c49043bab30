package testutil

import (
	"net"
	"testing"
)

// TCPPair returns the two ends of one TCP connection over loopback: what
// a client dialled and what a server accepted. Both are closed when the
// test ends. For tests of code that needs a real socket (deadlines,
// SyscallConn), where an in-memory pipe will not do.
func TCPPair(tb testing.TB) (client, server net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close() })
	return client, server
}
