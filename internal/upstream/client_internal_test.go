package upstream

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"
)

// WriteRequest sends what Request.Write sends, as a server reads it: the
// method, target, Host, headers (User-Agent: Go's when absent, none when
// empty), Content-Length as net/http decides it, and the body.
func TestWriteRequestMatchesRequestWrite(t *testing.T) {
	type req struct {
		method, target, host string
		header               http.Header
		body                 string
	}
	tests := []struct {
		name string
		req  req
	}{
		{"GET with a query", req{"GET", "http://worker-1/a/b?x=1&y=%20", "example.com", http.Header{"Accept": {"text/html"}, "User-Agent": {""}}, ""}},
		{"GET, Go's User-Agent", req{"GET", "http://worker-1/", "example.com", http.Header{}, ""}},
		{"an escaped path", req{"GET", "http://worker-1/a%2Fb/c%20d", "example.com:8080", http.Header{"User-Agent": {"ua/1", "ua/2"}}, ""}},
		{"POST with a body", req{"POST", "http://worker-1/p", "h", http.Header{"Content-Type": {"text/plain"}, "X-Many": {"1", "2"}}, "hello"}},
		{"POST, empty", req{"POST", "http://worker-1/p", "h", http.Header{}, ""}},
		{"DELETE, empty", req{"DELETE", "http://worker-1/d", "h", http.Header{}, ""}},
		{"HEAD", req{"HEAD", "http://worker-1/h", "h", http.Header{}, ""}},
		{"a value with outer spaces and a line break", req{"GET", "http://worker-1/", "h", http.Header{"X-Odd": {"  a\r\nb  "}}, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mk := func() *http.Request {
				r, err := http.NewRequest(tt.req.method, tt.req.target, nil)
				if err != nil {
					t.Fatal(err)
				}
				r.Host = tt.req.host
				r.Header = tt.req.header.Clone()
				if tt.req.body != "" {
					r.Body = io.NopCloser(strings.NewReader(tt.req.body))
					r.ContentLength = int64(len(tt.req.body))
				}
				return r
			}
			var want bytes.Buffer
			if err := mk().Write(&want); err != nil {
				t.Fatal(err)
			}
			got := writeToBuffer(t, mk())
			g, w := readBack(t, got), readBack(t, want.Bytes())
			if !reflect.DeepEqual(g, w) {
				t.Errorf("got %+v\nwant %+v\n(got %q, Request.Write %q)", g, w, got, want.Bytes())
			}
		})
	}
}

// writeToBuffer runs WriteRequest into a pipe and returns what it wrote.
func writeToBuffer(t *testing.T, r *http.Request) []byte {
	a, b := net.Pipe()
	defer b.Close()
	done := make(chan []byte)
	go func() {
		out, _ := io.ReadAll(b)
		done <- out
	}()
	if err := WriteRequest(a, r); err != nil {
		t.Fatal(err)
	}
	a.Close()
	return <-done
}

type parsed struct {
	Method, RequestURI, Host string
	Header                   http.Header
	ContentLength            int64
	Body                     string
}

func readBack(t *testing.T, raw []byte) parsed {
	r, err := http.ReadRequest(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatalf("reading %q back: %v", raw, err)
	}
	body, _ := io.ReadAll(r.Body)
	return parsed{r.Method, r.RequestURI, r.Host, r.Header, r.ContentLength, string(body)}
}

// A kept-alive connection the worker closed while it was idle (its own
// keep-alive timeout, say) is not used again: the next request, a POST
// that must not be sent twice, goes on a fresh connection and is answered.
func TestClosedIdleConnectionNotReused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	methods := make(chan string, 2)
	go func() {
		for range 2 {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// One request per connection, then the worker closes it.
			if r, err := http.ReadRequest(bufio.NewReader(c)); err == nil {
				methods <- r.Method
				io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
			}
			c.Close()
		}
	}()
	cl := &Client{network: "tcp", addr: ln.Addr().String(), dial: (&net.Dialer{}).DialContext,
		dialTimeout: time.Second, maxIdle: 4, idleTimeout: time.Minute}
	defer cl.CloseIdle()
	if _, err := doCall(cl, http.MethodGet); err != nil {
		t.Fatalf("first request: %v", err)
	}
	cl.mu.Lock()
	idle := cl.idle[0]
	cl.mu.Unlock()
	// The worker's FIN reaches this end asynchronously: wait for it, bounded.
	for deadline := time.Now().Add(5 * time.Second); idle.look() == idleQuiet; {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection still looks open after 5 s")
		}
		time.Sleep(time.Millisecond)
	}
	c, err := doCall(cl, http.MethodPost)
	if err != nil {
		t.Fatalf("POST after the idle close: %v, want it answered on a fresh connection", err)
	}
	if !c.Sent() {
		t.Error("got not sent, want sent")
	}
	if got := []string{<-methods, <-methods}; got[1] != http.MethodPost {
		t.Errorf("the worker saw %v, want GET then POST", got)
	}
}

// BenchmarkIdleLook is the cost look adds to each reuse of a kept-alive
// connection: one peek that never waits, on a loopback socket with
// nothing to read.
//
//	go test ./internal/upstream -run '^$' -bench BenchmarkIdleLook -count 6
func BenchmarkIdleLook(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer nc.Close()
	if c := <-accepted; c != nil {
		defer c.Close()
	}
	wc := newConn(nc)
	b.ReportAllocs()
	for b.Loop() {
		if wc.look() != idleQuiet {
			b.Fatal("the idle connection does not look quiet")
		}
	}
}

// A look at an idle connection tells a close (end of file, or a server's
// 408 on an idle connection, RFC 9110 15.5.9) from bytes out of place.
func TestIdleLook(t *testing.T) {
	tests := []struct {
		name  string
		send  string // what the worker sends on the idle connection
		close bool   // then closes it
		want  idleState
	}{
		{"quiet", "", false, idleQuiet},
		{"closed", "", true, idleClosed},
		{"a 408 before the close", "HTTP/1.1 408 Request Timeout\r\nConnection: close\r\n\r\n", false, idleClosed},
		{"a stray response", "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nPOISON!!", false, idleUnsolicited},
		{"one stray byte", "x", false, idleUnsolicited},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			sent := make(chan error, 1)
			end := make(chan struct{})
			defer close(end)
			go func() {
				c, err := ln.Accept()
				if err != nil {
					sent <- err
					return
				}
				if tt.send != "" {
					_, err = io.WriteString(c, tt.send)
				}
				if tt.close || err != nil {
					c.Close()
				}
				sent <- err
				if !tt.close {
					<-end // c stays open until the look is done
					c.Close()
				}
			}()
			nc, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if err := <-sent; err != nil {
				t.Fatal(err)
			}
			wc := newConn(nc)
			// The bytes reach this end asynchronously: look until they
			// have, bounded.
			got := wc.look()
			for deadline := time.Now().Add(5 * time.Second); got == idleQuiet && tt.want != idleQuiet && time.Now().Before(deadline); got = wc.look() {
				time.Sleep(time.Millisecond)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}
