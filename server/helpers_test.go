package server_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// bound caps every wait in the integration tests: long enough for a noisy
// machine, short enough that a hang fails instead of stalling the run.
const bound = 10 * time.Second

// running is a Server serving on a real 127.0.0.1 listener.
type running struct {
	addr     string
	cancel   context.CancelFunc // starts the drain
	lnClosed chan struct{}      // closed when the server closes its listener

	once sync.Once
	done chan error
	err  error
}

// start serves s on 127.0.0.1:0 until the test ends (then cuts it).
func start(t *testing.T, s *server.Server) *running {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{
		addr:     ln.Addr().String(),
		cancel:   cancel,
		lnClosed: make(chan struct{}),
		done:     make(chan error, 1),
	}
	go func() { r.done <- s.Serve(ctx, &notifyListener{Listener: ln, closed: r.lnClosed}) }()
	t.Cleanup(func() {
		cancel()
		s.Cut()
		r.wait(t)
	})
	return r
}

// wait returns Serve's result, failing the test if it takes longer than
// bound.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	r.once.Do(func() {
		select {
		case r.err = <-r.done:
		case <-time.After(bound):
			r.err = errors.New("test: Serve did not return")
		}
	})
	return r.err
}

// notifyListener closes closed when it is closed.
type notifyListener struct {
	net.Listener
	closed chan struct{}
	once   sync.Once
}

func (l *notifyListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
}

// recv returns the next value from ch, failing the test after bound.
func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// waitEOF reads c until it is closed and returns how long that took from
// since. Data before the close is discarded.
func waitEOF(t *testing.T, c net.Conn, since time.Time) time.Duration {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(bound))
	_, err := io.Copy(io.Discard, c)
	took := time.Since(since)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection still open after %v", took)
	}
	return took
}

func get(t *testing.T, c *http.Client, url string) (*http.Response, string) {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, string(b)
}

// client returns an HTTP/1.1 client of its own, closed with the test.
func client(t *testing.T) *http.Client {
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: bound}
}

// selfSigned returns a certificate for 127.0.0.1 and a pool trusting it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "sluice test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool
}

// writePEM writes cert to PEM files in a temporary directory.
func writePEM(t *testing.T, cert tls.Certificate) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	keyDER, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	for _, f := range []struct {
		name, typ string
		der       []byte
	}{{certFile, "CERTIFICATE", cert.Certificate[0]}, {keyFile, "PRIVATE KEY", keyDER}} {
		if err := os.WriteFile(f.name, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return certFile, keyFile
}

// h2Conn is a raw HTTP/2 client connection, to see the frames the server
// sends (GOAWAY above all), which net/http's client hides.
type h2Conn struct {
	t      *testing.T
	conn   net.Conn
	mu     sync.Mutex // serialises writes
	fr     *http2.Framer
	frames chan h2Frame // closed after the read error
}

// h2Frame is what the tests need of a frame read.
type h2Frame struct {
	typ        http2.FrameType
	stream     uint32
	endStream  bool
	status     string // HEADERS
	data       string // DATA
	code       http2.ErrCode
	lastStream uint32 // GOAWAY
	err        error  // the read error that ended the connection
}

// dialH2 opens an HTTP/2 connection to addr: over TLS with ALPN when pool
// is not nil, else with prior knowledge (h2c).
func dialH2(t *testing.T, addr string, pool *x509.CertPool) *h2Conn {
	t.Helper()
	var c net.Conn
	var err error
	if pool != nil {
		c, err = tls.Dial("tcp", addr, &tls.Config{RootCAs: pool, NextProtos: []string{"h2"}})
		if err == nil && c.(*tls.Conn).ConnectionState().NegotiatedProtocol != "h2" {
			t.Fatalf("ALPN: got %q, want h2", c.(*tls.Conn).ConnectionState().NegotiatedProtocol)
		}
	} else {
		c, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	h := &h2Conn{t: t, conn: c, fr: http2.NewFramer(c, c), frames: make(chan h2Frame, 64)}
	h.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	h.fr.MaxHeaderListSize = 1 << 20
	if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	h.write(func(fr *http2.Framer) error { return fr.WriteSettings() })
	acked := make(chan struct{})
	go h.read(acked)
	// The ACK of the server's SETTINGS must not land inside a header block
	// a test leaves open.
	recv(t, acked, "the server's SETTINGS")
	return h
}

func (h *h2Conn) write(f func(*http2.Framer) error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := f(h.fr); err != nil {
		h.t.Errorf("write frame: %v", err)
	}
}

func (h *h2Conn) read(acked chan<- struct{}) {
	defer close(h.frames)
	for {
		f, err := h.fr.ReadFrame()
		if err != nil {
			h.frames <- h2Frame{err: err}
			return
		}
		hf := h2Frame{typ: f.Header().Type, stream: f.Header().StreamID}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				h.mu.Lock()
				h.fr.WriteSettingsAck()
				h.mu.Unlock()
				if acked != nil {
					close(acked)
					acked = nil
				}
			}
			continue
		case *http2.WindowUpdateFrame, *http2.PingFrame:
			continue
		case *http2.MetaHeadersFrame:
			hf.status = f.PseudoValue("status")
			hf.endStream = f.StreamEnded()
		case *http2.DataFrame:
			hf.data = string(f.Data())
			hf.endStream = f.StreamEnded()
		case *http2.GoAwayFrame:
			hf.code, hf.lastStream = f.ErrCode, f.LastStreamID
		case *http2.RSTStreamFrame:
			hf.code = f.ErrCode
		}
		h.frames <- hf
	}
}

// headers encodes a request's header block.
func headers(method, path string, extra ...hpack.HeaderField) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range append([]hpack.HeaderField{
		{Name: ":method", Value: method},
		{Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "127.0.0.1"},
		{Name: ":path", Value: path},
	}, extra...) {
		enc.WriteField(f)
	}
	return buf.Bytes()
}

// request opens a stream with a complete header block.
func (h *h2Conn) request(stream uint32, method, path string, endStream bool, extra ...hpack.HeaderField) {
	// Frames stay within HTTP/2's initial 16 KiB frame size: the rest of
	// a big block goes in CONTINUATION frames.
	const maxFrame = 16 << 10
	block := headers(method, path, extra...)
	h.write(func(fr *http2.Framer) error {
		first := block[:min(len(block), maxFrame)]
		block = block[len(first):]
		err := fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first, EndStream: endStream, EndHeaders: len(block) == 0})
		for err == nil && len(block) > 0 {
			next := block[:min(len(block), maxFrame)]
			block = block[len(next):]
			err = fr.WriteContinuation(stream, len(block) == 0, next)
		}
		return err
	})
}

// next returns the next frame of interest (not SETTINGS, WINDOW_UPDATE or
// PING), failing the test after bound.
func (h *h2Conn) next() h2Frame {
	h.t.Helper()
	select {
	case f, ok := <-h.frames:
		if !ok {
			h.t.Fatal("connection closed")
		}
		return f
	case <-time.After(bound):
		h.t.Fatal("timed out waiting for a frame")
		panic("unreachable")
	}
}

// response reads stream's response (HEADERS then DATA to END_STREAM) and
// returns its status and body; other frames are a failure.
func (h *h2Conn) response(stream uint32) (status, body string) {
	h.t.Helper()
	for {
		f := h.next()
		switch {
		case f.err != nil:
			h.t.Fatalf("stream %d: %v", stream, f.err)
		case f.stream != stream:
			h.t.Fatalf("stream %d: got %v frame on stream %d (code %v)", stream, f.typ, f.stream, f.code)
		case f.typ == http2.FrameHeaders:
			status = f.status
		case f.typ == http2.FrameData:
			body += f.data
		default:
			h.t.Fatalf("stream %d: got %v frame (code %v)", stream, f.typ, f.code)
		}
		if f.endStream {
			return status, body
		}
	}
}
