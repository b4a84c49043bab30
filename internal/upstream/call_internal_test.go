package upstream

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// scriptedDial returns a dial whose every connection is a pipe served by
// the next of behaviours: "refuse" (the dial fails), "close" (closed
// before reading anything), "read-close" (the request is read, no answer)
// or "answer" (a 200 with a body, then the connection stays open).
func scriptedDial(t *testing.T, behaviours ...string) func(context.Context, string, string) (net.Conn, error) {
	var mu sync.Mutex
	return func(context.Context, string, string) (net.Conn, error) {
		mu.Lock()
		defer mu.Unlock()
		if len(behaviours) == 0 {
			t.Error("dialled more often than scripted")
			return nil, errors.New("no more connections")
		}
		b := behaviours[0]
		behaviours = behaviours[1:]
		if b == "refuse" {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}
		a, srv := net.Pipe()
		t.Cleanup(func() { a.Close(); srv.Close() })
		go serveScripted(srv, b)
		return a, nil
	}
}

func serveScripted(c net.Conn, behaviour string) {
	defer c.Close()
	if behaviour == "close" {
		return
	}
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		io.Copy(io.Discard, req.Body)
		if behaviour == "read-close" {
			return
		}
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
	}
}

func testClient(dial func(context.Context, string, string) (net.Conn, error)) *Client {
	return &Client{network: "tcp", addr: "w", dial: dial, dialTimeout: time.Second, maxIdle: 4, idleTimeout: time.Minute}
}

func doCall(cl *Client, method string) (*Call, error) {
	var body io.Reader
	if method == http.MethodPost {
		body = strings.NewReader("x")
	}
	req, _ := http.NewRequest(method, "http://w/x", body)
	if body != nil {
		req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("x")), nil }
	}
	c := new(Call)
	resp, err := cl.RoundTrip(c, req)
	if err == nil {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	return c, err
}

// A request counts as sent once any byte of it reached any connection the
// client gave it: a refused dial or a connection closed before the
// request was written leave it unsent (it may go to another worker), a
// request the worker read is sent whether or not it answered, and a GET
// replayed on a fresh connection after its reused one failed stays sent.
func TestCallSent(t *testing.T) {
	tests := []struct {
		name      string
		dials     []string
		warm      bool   // one request first, whose connection is reused
		method    string // of the request checked
		wantErr   bool
		wantSent  bool
		wantDials int
	}{
		{"a refused dial", []string{"refuse"}, false, "GET", true, false, 1},
		{"closed before the request was written", []string{"close"}, false, "POST", true, false, 1},
		{"read, never answered", []string{"read-close"}, false, "POST", true, true, 1},
		{"answered", []string{"answer"}, false, "GET", false, true, 1},
		{"reused connection dies mid-request, POST not replayed", []string{"answer"}, true, "POST", true, true, 1},
		{"reused connection dies mid-request, GET replayed on a fresh one", []string{"answer", "answer"}, true, "GET", false, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dials := 0
			dial := scriptedDial(t, tt.dials...)
			cl := testClient(func(ctx context.Context, n, a string) (net.Conn, error) {
				dials++
				return dial(ctx, n, a)
			})
			defer cl.CloseIdle()
			if tt.warm {
				if _, err := doCall(cl, http.MethodGet); err != nil {
					t.Fatalf("warm-up: %v", err)
				}
				// The worker now fails the next request on that connection,
				// after reading it.
				cl.mu.Lock()
				wc := cl.idle[0]
				cl.mu.Unlock()
				wc.c.Conn = &closeAfterWrite{Conn: wc.c.Conn}
			}
			c, err := doCall(cl, tt.method)
			if (err != nil) != tt.wantErr {
				t.Errorf("got error %v, want error: %v", err, tt.wantErr)
			}
			if got := c.Sent(); got != tt.wantSent {
				t.Errorf("wasSent: got %v, want %v", got, tt.wantSent)
			}
			if dials != tt.wantDials {
				t.Errorf("got %d dials, want %d", dials, tt.wantDials)
			}
		})
	}
}

// A request the worker read before dying is Reached at every instant
// after, also while its failed connection is being closed: a worker's
// death reported then (the proxy asks Reached which requests a dead worker
// held) must count it.
func TestCallReachedWhileFailedConnectionCloses(t *testing.T) {
	closing, resume := make(chan struct{}), make(chan struct{})
	dial := scriptedDial(t, "read-close")
	cl := testClient(func(ctx context.Context, n, a string) (net.Conn, error) {
		nc, err := dial(ctx, n, a)
		if err != nil {
			return nil, err
		}
		return &heldClose{Conn: nc, closing: closing, resume: resume}, nil
	})
	defer cl.CloseIdle()
	c := new(Call)
	req, _ := http.NewRequest(http.MethodPost, "http://w/x", strings.NewReader("x"))
	done := make(chan error, 1)
	go func() {
		_, err := cl.RoundTrip(c, req)
		done <- err
	}()
	<-closing // the worker read the request and died; its connection is being closed
	if !c.Reached() {
		t.Error("Reached() = false while the failed connection closes; want true: the worker read the request")
	}
	close(resume)
	if err := <-done; err == nil {
		t.Error("RoundTrip succeeded; want the worker's failure")
	}
	if !c.Sent() {
		t.Error("Sent() = false after the worker read the request")
	}
}

// heldClose closes only once the test lets it: the instant between a
// failed connection being let go and closed, held open.
type heldClose struct {
	net.Conn
	closing, resume chan struct{}
	once            sync.Once
}

func (c *heldClose) Close() error {
	c.once.Do(func() {
		close(c.closing)
		<-c.resume
	})
	return c.Conn.Close()
}

// closeAfterWrite writes, then closes the connection: a worker that died
// of the request.
type closeAfterWrite struct{ net.Conn }

func (c *closeAfterWrite) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.Conn.Close()
	return n, err
}

// An aborted call closes its connection, and fails with abort's error
// whatever it tries next.
func TestCallAbort(t *testing.T) {
	cl := testClient(scriptedDial(t, "answer"))
	defer cl.CloseIdle()
	c := new(Call)
	hung := errors.New("hung")
	c.Abort(hung)
	c.Abort(errors.New("second"))
	req, _ := http.NewRequest(http.MethodGet, "http://w/x", nil)
	if _, err := cl.RoundTrip(c, req); err != hung {
		t.Errorf("got %v, want the first abort's error", err)
	}
	if c.Sent() {
		t.Error("got sent, want nothing sent after an abort")
	}
}
