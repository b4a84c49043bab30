package proxy_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// FuzzProxyRequest feeds raw bytes, as a client would send them on one
// connection, to a net/http server whose handler is the Proxy, in front of
// a worker that records every request it receives. Whatever the bytes
// (several requests, smuggling attempts, broken framing), it checks:
//
//   - nothing panics (other than http.ErrAbortHandler, the Proxy's way
//     to cut a response);
//   - every request the worker receives is one the server parsed, and
//     reaches the worker at most once: no request is smuggled inside
//     another's body or after it;
//   - the body the worker sees is byte for byte the body the server parsed.
//
// The seeds (testdata/fuzz/FuzzProxyRequest) are the smuggling vectors:
// CL.TE, TE.CL, duplicate Content-Length, obfuscated Transfer-Encoding,
// h2c upgrade, pipelining. go test runs them; go test -fuzz explores.
func FuzzProxyRequest(f *testing.F) {
	f.Add([]byte("GET / HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Add([]byte("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhelloGET /x HTTP/1.1\r\nHost: a\r\n\r\n"))
	f.Fuzz(func(t *testing.T, raw []byte) {
		synctest.Test(t, func(t *testing.T) { fuzzOne(t, raw) })
	})
}

// fuzzWorker records the requests a worker receives, by the sequence
// number the front put in their query.
type fuzzWorker struct {
	mu     sync.Mutex
	bodies map[int][][]byte // seq -> the body of each request with it
	bad    []string         // requests without a known sequence number
}

func (w *fuzzWorker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	w.mu.Lock()
	defer w.mu.Unlock()
	seq, perr := strconv.Atoi(r.URL.Query().Get("fuzzseq"))
	if perr != nil || err != nil {
		w.bad = append(w.bad, fmt.Sprintf("%s %q (body error %v)", r.Method, r.URL.RequestURI(), err))
		return
	}
	w.bodies[seq] = append(w.bodies[seq], b)
	io.WriteString(rw, "ok")
}

// fuzzFront is the front's handler: it numbers each request it parsed,
// keeps the body the server's parser gave it, and catches panics.
type fuzzFront struct {
	p *proxy.Proxy

	mu     sync.Mutex
	seq    int
	bodies map[int]*bytes.Buffer // what the server parsed, as the Proxy read it
	read   map[int]bool          // the Proxy read the body to its end
	panics []any
}

type teeBody struct {
	io.ReadCloser
	buf *bytes.Buffer
	eof *bool
	mu  *sync.Mutex
}

func (b teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.buf.Write(p[:n])
	if err == io.EOF {
		*b.eof = true
	}
	b.mu.Unlock()
	return n, err
}

func (f *fuzzFront) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.seq++
	seq := f.seq
	buf := new(bytes.Buffer)
	f.bodies[seq] = buf
	eof := new(bool)
	*eof = r.Body == nil || r.Body == http.NoBody
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.read[seq] = *eof
		f.mu.Unlock()
		if v := recover(); v != nil {
			if v != http.ErrAbortHandler {
				f.mu.Lock()
				f.panics = append(f.panics, v)
				f.mu.Unlock()
			}
			panic(http.ErrAbortHandler)
		}
	}()
	r.URL.RawQuery = "fuzzseq=" + strconv.Itoa(seq)
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = teeBody{ReadCloser: r.Body, buf: buf, eof: eof, mu: &f.mu}
	}
	f.p.ServeHTTP(w, r)
}

func fuzzOne(t *testing.T, raw []byte) {
	g := newRig(t, proxy.Options{MaxBodyBytes: 4 << 10, Timeout: time.Second, HangGrace: time.Second},
		admission.Options{QueueTimeout: time.Second})
	wk := &fuzzWorker{bodies: make(map[int][][]byte)}
	wl := g.net.Listen("fuzzworker")
	wsrv := &http.Server{Handler: wk}
	go wsrv.Serve(wl)
	defer wsrv.Close()
	g.p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: "fuzzworker", Concurrency: 2})

	front := &fuzzFront{p: g.p, bodies: make(map[int]*bytes.Buffer), read: make(map[int]bool)}
	fl := g.net.Listen("front")
	fsrv := &http.Server{
		Handler:           front,
		ReadHeaderTimeout: time.Second,
		ReadTimeout:       2 * time.Second,
		IdleTimeout:       time.Second,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          nil,
	}
	go fsrv.Serve(fl)
	defer fsrv.Close()

	conn, err := g.net.Dial(context.Background(), "tcp", "front")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		conn.Write(raw)
		// No half-close on a pipe: the server's timeouts end the
		// connection once it has parsed all it can.
	}()
	io.Copy(io.Discard, conn) // until the server closes the connection
	conn.Close()
	fsrv.Close()
	synctest.Wait()

	front.mu.Lock()
	defer front.mu.Unlock()
	wk.mu.Lock()
	defer wk.mu.Unlock()
	for _, v := range front.panics {
		t.Errorf("the handler panicked: %v", v)
	}
	for _, b := range wk.bad {
		t.Errorf("the worker received a request the front never parsed: %s", b)
	}
	for seq, got := range wk.bodies {
		want, ok := front.bodies[seq]
		switch {
		case !ok:
			t.Errorf("the worker received request %d, which the front never parsed", seq)
		case len(got) > 1:
			t.Errorf("request %d reached the worker %d times, want at most once", seq, len(got))
		case !front.read[seq]:
			t.Errorf("request %d reached the worker though its body was not read to the end (%d bytes read)", seq, want.Len())
		case !bytes.Equal(got[0], want.Bytes()):
			t.Errorf("request %d: the worker got body %q, the front parsed %q", seq, got[0], want.Bytes())
		}
	}
}
