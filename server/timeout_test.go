package server_test

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The timeouts under test are short; the others are long, so that an
// early or late cut is told apart from the right one.
const (
	short = 300 * time.Millisecond
	long  = 3 * time.Second
	// late is how late after its timeout a cut may come on a noisy
	// machine, and still be told apart from a cut at long.
	late = 1200 * time.Millisecond
)

func checkCut(t *testing.T, what string, took, want time.Duration) {
	t.Helper()
	if took < want || took > want+late {
		t.Errorf("%s: cut after %v, want %v (+%v at most)", what, took, want, late)
	}
}

// A client that sends half a header line and stalls is disconnected at the
// header bound, which is the shorter of HeadersTimeout and RequestTimeout,
// while another client is served.
func TestHeadersTimeout(t *testing.T) {
	tests := []struct {
		name             string
		headers, request time.Duration
		want             time.Duration
	}{
		{"HeadersTimeout", short, long, short},
		{"capped by RequestTimeout", long, short, short},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &server.Server{HeadersTimeout: tc.headers, RequestTimeout: tc.request, KeepAliveTimeout: long}
			r := start(t, s)
			// The server's header deadline may be set as it accepts, before
			// Dial returns here: measured from before the dial, the cut is
			// never early.
			began := time.Now()
			stalled, err := net.Dial("tcp", r.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer stalled.Close()
			if _, err := io.WriteString(stalled, "GET / HTTP/1.1\r\nHost: sluice\r\nX-Half: ab"); err != nil {
				t.Fatal(err)
			}
			if resp, _ := get(t, client(t), "http://"+r.addr+"/"); resp.StatusCode != 404 {
				t.Errorf("other client: got %d, want 404", resp.StatusCode)
			}
			checkCut(t, "stalled headers", waitEOF(t, stalled, began), tc.want)
		})
	}
}

// An idle keep-alive connection is closed at KeepAliveTimeout; over HTTP/2
// the server sends GOAWAY when the connection has had no stream for that
// long.
func TestKeepAliveTimeout(t *testing.T) {
	t.Run("HTTP/1.1", func(t *testing.T) {
		r := start(t, &server.Server{KeepAliveTimeout: short, HeadersTimeout: long, RequestTimeout: long})
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// The server's idle wait may start before the client has read the
		// response: measured from the request, the cut is never early.
		sent := time.Now()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: sluice\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		if resp.Close {
			t.Fatal("response closes the connection, want keep-alive")
		}
		checkCut(t, "idle connection", waitEOF(t, c, sent), short)
	})
	t.Run("HTTP/2", func(t *testing.T) {
		cert, pool := selfSigned(t)
		r := start(t, &server.Server{
			KeepAliveTimeout: short, HeadersTimeout: long, RequestTimeout: long,
			TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}},
		})
		h := dialH2(t, r.addr, pool)
		// The server's idle wait starts when it closes the stream, which
		// may be before the client has read the response: measured from
		// the request, the cut is never early.
		idle := time.Now()
		h.request(1, "GET", "/", true)
		if status, _ := h.response(1); status != "404" {
			t.Fatalf("got %s, want 404", status)
		}
		f := h.next()
		if f.typ != http2.FrameGoAway {
			t.Fatalf("got %v frame, want GOAWAY", f.typ)
		}
		checkCut(t, "idle HTTP/2 connection (GOAWAY)", time.Since(idle), short)
		if f := h.next(); f.err == nil {
			t.Errorf("got %v frame after GOAWAY, want the connection closed", f.typ)
		}
	})
}

// Over HTTP/2 a stream exists only once its header block is complete: a
// client that stalls in the middle of one holds a connection with no
// stream, which KeepAliveTimeout closes.
func TestHTTP2StalledHeaderBlock(t *testing.T) {
	r := start(t, &server.Server{KeepAliveTimeout: short, HeadersTimeout: long, RequestTimeout: long, H2C: true})
	began := time.Now()
	h := dialH2(t, r.addr, nil)
	block := headers("GET", "/", hpack.HeaderField{Name: "x-pad", Value: strings.Repeat("a", 100)})
	h.write(func(fr *http2.Framer) error {
		return fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:len(block)/2], EndStream: true})
	})
	f := h.next()
	if f.typ != http2.FrameGoAway || f.code != http2.ErrCodeNo {
		t.Fatalf("got %v frame (code %v), want GOAWAY NO_ERROR", f.typ, f.code)
	}
	checkCut(t, "stalled header block", time.Since(began), short)
}

// A request body read past RequestTimeout fails with a deadline error,
// over HTTP/1.1 and HTTP/2.
func TestRequestTimeoutBody(t *testing.T) {
	type readResult struct {
		err error
		at  time.Time
	}
	newServer := func() (*server.Server, chan readResult) {
		read := make(chan readResult, 1)
		return &server.Server{
			RequestTimeout: short, HeadersTimeout: long, KeepAliveTimeout: long, H2C: true,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, err := io.ReadAll(r.Body)
				read <- readResult{err, time.Now()}
				if err != nil {
					w.WriteHeader(http.StatusRequestTimeout)
				}
			}),
		}, read
	}
	check := func(t *testing.T, read chan readResult, began time.Time) {
		t.Helper()
		res := recv(t, read, "the handler's body read")
		if !errors.Is(res.err, os.ErrDeadlineExceeded) {
			t.Fatalf("body read: got %v, want os.ErrDeadlineExceeded", res.err)
		}
		checkCut(t, "slow body", res.at.Sub(began), short)
	}
	t.Run("HTTP/1.1", func(t *testing.T) {
		s, read := newServer()
		r := start(t, s)
		c, err := net.Dial("tcp", r.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		began := time.Now()
		io.WriteString(c, "POST / HTTP/1.1\r\nHost: sluice\r\nContent-Length: 10\r\n\r\nab")
		check(t, read, began)
	})
	t.Run("HTTP/2", func(t *testing.T) {
		s, read := newServer()
		r := start(t, s)
		h := dialH2(t, r.addr, nil)
		began := time.Now()
		h.request(1, "POST", "/", false, hpack.HeaderField{Name: "content-length", Value: "10"})
		h.write(func(fr *http2.Framer) error { return fr.WriteData(1, false, []byte("ab")) })
		check(t, read, began)
	})
}

// A streamed response lives as long as it streams: every timeout is short
// and the stream lasts five times longer, with and without a request body,
// over HTTP/1.1, HTTP/2 with TLS and h2c. The handler honours its
// request's context, as a proxy or an event stream does.
func TestStreamingOutlivesTimeouts(t *testing.T) {
	const (
		timeout = 100 * time.Millisecond
		ticks   = 10
		every   = 50 * time.Millisecond
	)
	cert, pool := selfSigned(t)
	certFile, keyFile := writePEM(t, cert)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		rc := http.NewResponseController(w)
		fmt.Fprintf(w, "body %q\n", body)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for i := range ticks {
			fmt.Fprintf(w, "tick %d\n", i)
			if err := rc.Flush(); err != nil {
				return
			}
			select {
			case <-tick.C:
			case <-r.Context().Done():
				return // the client sees the stream end early
			}
		}
		io.WriteString(w, "end\n")
	})

	protocols := []struct {
		name   string
		tls    bool
		h2c    bool
		client *http.Transport
		major  int
	}{
		{"HTTP/1.1", false, false, &http.Transport{}, 1},
		// A client that offers only http/1.1 by ALPN gets it over TLS.
		{"HTTP/1.1 TLS", true, false, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}, 1},
		{"HTTP/2 TLS", true, false, &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}, 2},
		{"h2c", false, true, h2cTransport(), 2},
	}
	for _, p := range protocols {
		for _, method := range []string{"GET", "POST"} {
			t.Run(p.name+" "+method, func(t *testing.T) {
				s := &server.Server{
					Handler: handler, KeepAliveTimeout: timeout, HeadersTimeout: timeout, RequestTimeout: timeout,
					H2C: p.h2c,
				}
				scheme := "http"
				if p.tls {
					s.CertFile, s.KeyFile = certFile, keyFile
					scheme = "https"
				}
				r := start(t, s)
				var body io.Reader
				want := "body \"\"\n"
				if method == "POST" {
					body = strings.NewReader("payload")
					want = "body \"payload\"\n"
				}
				for i := range ticks {
					want += fmt.Sprintf("tick %d\n", i)
				}
				want += "end\n"

				req, _ := http.NewRequest(method, scheme+"://"+r.addr+"/stream", body)
				c := &http.Client{Transport: p.client, Timeout: bound}
				t.Cleanup(p.client.CloseIdleConnections)
				began := time.Now()
				resp, err := c.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				got, err := io.ReadAll(resp.Body)
				if err != nil {
					t.Fatalf("after %v: %v", time.Since(began), err)
				}
				if resp.ProtoMajor != p.major {
					t.Errorf("protocol: got HTTP/%d, want HTTP/%d", resp.ProtoMajor, p.major)
				}
				if string(got) != want {
					t.Errorf("after %v: got %q, want %q", time.Since(began), got, want)
				}
			})
		}
	}
}

func h2cTransport() *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Transport{Protocols: &p}
}

// Headers over MaxHeaderBytes get 431, over HTTP/1.1 (where Go allows 4 KiB
// of slack) and HTTP/2.
func TestMaxHeaderBytes(t *testing.T) {
	const limit = 16 << 10
	tests := []struct {
		name  string
		limit int // Server.MaxHeaderBytes
		size  int
		want  int
	}{
		{"under", limit, limit - 4<<10, 200},
		{"over", limit, limit + 8<<10, 431},
		{"under the default", 0, server.DefaultMaxHeaderBytes - 4<<10, 200},
		{"over the default", 0, server.DefaultMaxHeaderBytes + 8<<10, 431},
	}
	for _, tc := range tests {
		s := &server.Server{MaxHeaderBytes: tc.limit, H2C: true,
			Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}),
		}
		r := start(t, s)
		t.Run("HTTP/1.1 "+tc.name, func(t *testing.T) {
			c, err := net.Dial("tcp", r.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			go fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: sluice\r\nX-Big: %s\r\n\r\n", strings.Repeat("a", tc.size))
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Errorf("%d bytes of header: got %d, want %d", tc.size, resp.StatusCode, tc.want)
			}
		})
		t.Run("HTTP/2 "+tc.name, func(t *testing.T) {
			// In fields of 1 KiB: a single field over the bound is an
			// HPACK error that ends the connection.
			var fields []hpack.HeaderField
			for i := range tc.size >> 10 {
				fields = append(fields, hpack.HeaderField{Name: fmt.Sprintf("x-big-%d", i), Value: strings.Repeat("a", 1<<10)})
			}
			h := dialH2(t, r.addr, nil)
			h.request(1, "GET", "/", true, fields...)
			if status, _ := h.response(1); status != fmt.Sprint(tc.want) {
				t.Errorf("%d bytes of header: got %s, want %d", tc.size, status, tc.want)
			}
		})
	}
}
