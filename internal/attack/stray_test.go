package attack

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/sluicehq/sluice/internal/testutil"
)

// strayUpstream is a misbehaving worker speaking raw HTTP/1.1, as a Node.js
// handler does that declares a Content-Length too short and writes more
// later:
//
//	res.setHeader('Content-Length', 5); res.write('hello')
//	setTimeout(() => { res.write('HTTP/1.1 200 OK ... POISON!!'); res.end() }, 30)
//
// /mismatch is answered so; its stray bytes are reported on strays once
// the peer's kernel has them (or the peer reset the connection). Any other
// path is answered "you asked for <path>". It returns the upstreams
// section for Start's config.
func strayUpstream(t *testing.T, strays chan<- struct{}) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() { serveStray(c, strays) })
		}
	})
	return fmt.Sprintf("upstreams:\n  servers:\n    - address: %s\n      concurrency: 1\n", ln.Addr())
}

func serveStray(c net.Conn, strays chan<- struct{}) {
	defer c.Close()
	br := bufio.NewReader(c)
	for {
		r, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/mismatch" {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 5\r\n\r\nhello")
			time.Sleep(30 * time.Millisecond) // the worker's own timer: its later write
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 8\r\n\r\nPOISON!!")
			sent(c)
			strays <- struct{}{}
			continue
		}
		body := "you asked for " + r.URL.Path
		fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	}
}

// sent waits, bounded, until c's send queue is empty (on loopback: the
// bytes are in the peer's receive queue) or the peer reset c.
func sent(c net.Conn) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return
	}
	for deadline := time.Now().Add(bound); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		var n int32
		var soErr int
		raw.Control(func(fd uintptr) {
			syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCOUTQ, uintptr(unsafe.Pointer(&n)))
			soErr, _ = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_ERROR)
		})
		if n == 0 || soErr != 0 {
			return
		}
	}
}

// A worker that writes past its Content-Length in a later write: its stray
// bytes (a whole response) reach no other client, whether the next
// requests come one after another or all at once, nor when it does it
// again amid concurrent traffic; sluice counts it.
func TestStrayWorkerBytesReachNoOtherClient(t *testing.T) {
	strays := make(chan struct{}, 64)
	s := Start(t, `server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
`+strayUpstream(t, strays))
	base := "http://" + s.Addr
	get := func(path string) (int, string) {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		return testutil.Get(ctx, base+path)
	}
	var mu sync.Mutex
	wrong, served := 0, 0
	// A request may be shed (503: one slot, and /mismatch holds it 30 ms);
	// one answered 200 must carry its own answer.
	check := func(path string) {
		code, body := get(path)
		mu.Lock()
		defer mu.Unlock()
		switch want := "you asked for " + path; {
		case code == 200 && body == want:
			served++
		case code == 200 || code != http.StatusServiceUnavailable:
			wrong++
			t.Errorf("%s: got %d %q, want 200 %q (or a 503 shed)", path, code, body, want)
		}
	}

	if code, body := get("/mismatch"); code != 200 || body != "hello" {
		t.Fatalf("/mismatch: got %d %q, want 200 hello", code, body)
	}
	<-strays
	for i := range 20 {
		check("/seq/" + strconv.Itoa(i))
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() { check("/par/" + strconv.Itoa(i)) })
	}
	wg.Wait()

	// Again, amid concurrent requests from other clients: the worker's
	// connections are no longer reused.
	for i := range 100 {
		if i%10 == 0 {
			wg.Go(func() { get("/mismatch") })
		}
		wg.Go(func() { check("/mix/" + strconv.Itoa(i)) })
	}
	wg.Wait()
	if wrong > 0 {
		t.Errorf("%d requests got another request's response (%d their own)", wrong, served)
	}
	if served < 60 {
		t.Errorf("only %d of 160 requests were answered: too few to tell", served)
	}
	st := s.Stats(t)
	if st.Proxy.Unsolicited < 1 {
		t.Errorf("/stats proxy.unsolicited = %d, want at least 1", st.Proxy.Unsolicited)
	}
	s.Stop(t)
}
