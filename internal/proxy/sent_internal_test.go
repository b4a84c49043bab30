package proxy

import (
	"net"
	"net/http/httptrace"
	"testing"
)

// sendTrace counts a request as sent once any byte of it reached any of
// the connections the Transport gave it, and assumes the worst of a
// connection it cannot count.
func TestSendTrace(t *testing.T) {
	pipe := func() *countingConn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		go func() {
			buf := make([]byte, 64)
			for {
				if _, err := b.Read(buf); err != nil {
					return
				}
			}
		}()
		return &countingConn{Conn: a}
	}
	tests := []struct {
		name string
		run  func(*sendTrace)
		want bool
	}{
		{"no connection (a refused dial)", func(*sendTrace) {}, false},
		{"a connection, nothing written", func(st *sendTrace) {
			st.gotConn(httptrace.GotConnInfo{Conn: pipe()})
		}, false},
		{"a reused connection written before, not now", func(st *sendTrace) {
			c := pipe()
			c.Write([]byte("earlier request"))
			st.gotConn(httptrace.GotConnInfo{Conn: c, Reused: true})
		}, false},
		{"written", func(st *sendTrace) {
			c := pipe()
			st.gotConn(httptrace.GotConnInfo{Conn: c})
			c.Write([]byte("GET / HTTP/1.1\r\n"))
		}, true},
		{"written to a first connection, then replayed on a second", func(st *sendTrace) {
			c := pipe()
			st.gotConn(httptrace.GotConnInfo{Conn: c, Reused: true})
			c.Write([]byte("GET / HTTP/1.1\r\n"))
			st.gotConn(httptrace.GotConnInfo{Conn: pipe()})
		}, true},
		{"a connection it cannot count", func(st *sendTrace) {
			a, b := net.Pipe()
			defer a.Close()
			defer b.Close()
			st.gotConn(httptrace.GotConnInfo{Conn: a})
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := new(sendTrace)
			tt.run(st)
			if got := st.wasSent(); got != tt.want {
				t.Errorf("wasSent: got %v, want %v", got, tt.want)
			}
		})
	}
}
