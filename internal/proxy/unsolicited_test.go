package proxy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// The tests of this file run over real loopback sockets: the look at an
// idle connection before its reuse is a look at a socket.

// strayResponse is what the stray worker writes past its declared length: a whole
// response, which a proxy that reuses the connection would take for the
// next request's.
const strayResponse = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nPOISON!!"

// strayWorker is a worker speaking raw HTTP/1.1 (net/http would refuse to
// write past a Content-Length). Each connection is served by a goroutine of
// its own, one request after another. /mismatch declares 5 bytes, writes
// "hello", waits until the test opens gate, then writes strayResponse in a later
// write, as a Node.js handler with a wrong Content-Length does; it then
// waits until the bytes have left for the peer (flushed) and reports it on
// stray. /overlong writes "hello" and strayResponse in one write, past the same
// declared length. Any other path is answered "you asked for <path>".
type strayWorker struct {
	ln    net.Listener
	gate  chan struct{} // one receive per /mismatch
	stray chan struct{} // one send per strayResponse written and delivered
	reqs  chan string   // each request's path as the worker reads it
}

func newStrayWorker(t *testing.T) *strayWorker {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	w := &strayWorker{ln: ln, gate: make(chan struct{}, 16), stray: make(chan struct{}, 16), reqs: make(chan string, 1024)}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		close(w.gate)
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { w.serve(t, c) })
		}
	})
	return w
}

func (w *strayWorker) serve(t *testing.T, c net.Conn) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, r.Body)
		w.reqs <- r.URL.Path
		if r.URL.Path == "/overlong" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello"+strayResponse)
			continue
		}
		if r.URL.Path == "/mismatch" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
			if _, ok := <-w.gate; !ok {
				return
			}
			io.WriteString(c, strayResponse)
			if err := delivered(c); err != nil {
				t.Errorf("stray worker: %v", err)
			}
			w.stray <- struct{}{}
			continue
		}
		body := "you asked for " + r.URL.Path
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// delivered waits until every byte written on c has been taken by the
// peer's kernel (the send queue, TIOCOUTQ, is empty: on loopback the bytes
// are then in the peer's receive queue), or the peer reset the connection
// (it had closed it: the bytes go nowhere), bounded.
func delivered(c net.Conn) error {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); ; {
		var n int32
		var errno syscall.Errno
		var soErr int
		if err := raw.Control(func(fd uintptr) {
			_, _, errno = syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
			soErr, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
		}); err != nil {
			return err
		}
		if errno != 0 {
			return errno
		}
		if n == 0 || soErr != 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d bytes still unsent after 5 s", n)
		}
		time.Sleep(time.Millisecond) // polling the kernel's queue: no event tells
	}
}

// strayProxy is a Proxy in front of w as one endpoint of concurrency 1.
func strayProxy(t *testing.T, w *strayWorker) *proxy.Proxy {
	t.Helper()
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(admission.MaxLimit), SampleWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Controller: c})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: w.ln.Addr().String(), Concurrency: 1})
	t.Cleanup(func() {
		p.CloseIdleConnections()
		c.Close()
	})
	return p
}

func serveGet(p *proxy.Proxy, path string) (int, string) {
	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return rec.Code, rec.Body.String()
}

// A worker writes past its Content-Length in a later write (a whole
// response). Its stray bytes reach no client: every request after it,
// sequential and concurrent, gets its own answer, the connection that
// carries the stray bytes is closed and counted.
func TestStrayBytesReachNoOtherClient(t *testing.T) {
	w := newStrayWorker(t)
	p := strayProxy(t, w)

	if code, body := serveGet(p, "/mismatch"); code != 200 || body != "hello" {
		t.Fatalf("/mismatch: got %d %q, want 200 %q", code, body, "hello")
	}
	w.gate <- struct{}{}
	<-w.stray // the strayResponse waits on the idle connection

	check := func(path string) {
		code, body := serveGet(p, path)
		if want := "you asked for " + path; code != 200 || body != want {
			t.Errorf("%s: got %d %q, want 200 %q", path, code, body, want)
		}
	}
	for i := range 20 {
		check("/seq/" + strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { check("/par/" + strconv.Itoa(i)) })
	}
	wg.Wait()
	if st := p.Stats(); st.Unsolicited != 1 || !st.Endpoints[0].FramingBroken {
		t.Errorf("Stats: Unsolicited = %d, FramingBroken = %v; want 1, true", st.Unsolicited, st.Endpoints[0].FramingBroken)
	}
}

// Once a worker has sent bytes outside a response, none of its connections
// is reused: a stray write that comes after the next request was written
// (which no look before reuse can see) still reaches no other client.
func TestWorkerThatBrokeFramingGetsNoReuse(t *testing.T) {
	w := newStrayWorker(t)
	p := strayProxy(t, w)

	// The first offence, caught by the look before reuse.
	serveGet(p, "/mismatch")
	w.gate <- struct{}{}
	<-w.stray
	serveGet(p, "/after")
	if got := p.Stats().Unsolicited; got != 1 {
		t.Fatalf("Stats.Unsolicited = %d, want 1", got)
	}
	drain(w.reqs)

	// The second: its stray write waits until the next request has been
	// read by the worker, on whichever connection it was sent.
	if code, body := serveGet(p, "/mismatch"); code != 200 || body != "hello" {
		t.Fatalf("/mismatch: got %d %q, want 200 hello", code, body)
	}
	<-w.reqs // /mismatch
	done := make(chan string, 1)
	go func() {
		_, body := serveGet(p, "/next")
		done <- body
	}()
	select {
	case path := <-w.reqs:
		if path != "/next" {
			t.Fatalf("worker read %s, want /next", path)
		}
	case body := <-done:
		// Both may be ready at once: the worker reads /next, then answers.
		select {
		case path := <-w.reqs:
			if path != "/next" {
				t.Fatalf("worker read %s, want /next", path)
			}
		default:
			t.Fatalf("/next answered %q before the worker read it", body)
		}
		done <- body
	case <-time.After(10 * time.Second):
		t.Fatal("/next was not read by the worker within 10 s: it waits behind /mismatch on the same connection")
	}
	w.gate <- struct{}{}
	if body := <-done; body != "you asked for /next" {
		t.Errorf("/next: got %q, want %q", body, "you asked for /next")
	}
	<-w.stray
}

// Bytes read past a response's end, in the same read as its last ones,
// are caught as they are read: counted, the connection closed, and the
// worker's connections no longer reused.
func TestBytesPastResponseEndCounted(t *testing.T) {
	w := newStrayWorker(t)
	p := strayProxy(t, w)
	if code, body := serveGet(p, "/overlong"); code != 200 || body != "hello" {
		t.Fatalf("/overlong: got %d %q, want 200 hello", code, body)
	}
	if got := p.Stats().Unsolicited; got != 1 {
		t.Errorf("Stats.Unsolicited = %d, want 1", got)
	}
	for i := range 5 {
		path := "/after/" + strconv.Itoa(i)
		if code, body := serveGet(p, path); code != 200 || body != "you asked for "+path {
			t.Errorf("%s: got %d %q", path, code, body)
		}
	}
}

func drain(c chan string) {
	for {
		select {
		case <-c:
		default:
			return
		}
	}
}
