package server_test

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/server"
)

// certPair is a generated self-signed certificate and its key, PEM-encoded.
type certPair struct{ cert, key []byte }

func newCertPair(t *testing.T, cn string) certPair {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: cn},
		DNSNames:     []string{cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return certPair{
		cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		key:  pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
	}
}

// certFiles are where a test keeps its certPair.
type certFiles struct{ cert, key string }

func newCertFiles(t *testing.T) certFiles {
	dir := t.TempDir()
	return certFiles{filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
}

func writeCert(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// replace writes data beside path and renames it over path, as a
// certificate manager does: a new file, not new contents.
func renameOver(t *testing.T, path string, data []byte) {
	t.Helper()
	writeCert(t, path+".tmp", data)
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
}

func (f certFiles) write(t *testing.T, p certPair) {
	writeCert(t, f.cert, p.cert)
	writeCert(t, f.key, p.key)
}

// served completes a TLS handshake with c over an in-memory connection and
// returns the common name of the certificate the client was shown.
func servedCN(t *testing.T, c *server.Certs) string {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	srv := tls.Server(a, c.TLSConfig())
	var wg sync.WaitGroup
	wg.Go(func() { srv.Handshake() })
	cl := tls.Client(b, &tls.Config{InsecureSkipVerify: true, ServerName: "example.test"})
	if err := cl.Handshake(); err != nil {
		t.Fatalf("handshake: %v", err)
	}
	cn := cl.ConnectionState().PeerCertificates[0].Subject.CommonName
	a.Close()
	wg.Wait()
	return cn
}

func TestCertsRotation(t *testing.T) {
	for _, tt := range []struct {
		name  string
		write func(t *testing.T, f certFiles, p certPair)
	}{
		{"written in place", func(t *testing.T, f certFiles, p certPair) { f.write(t, p) }},
		{"renamed over", func(t *testing.T, f certFiles, p certPair) {
			renameOver(t, f.cert, p.cert)
			renameOver(t, f.key, p.key)
		}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newCertFiles(t)
			first, second := newCertPair(t, "first.test"), newCertPair(t, "second.test")
			f.write(t, first)
			synctest.Test(t, func(t *testing.T) {
				c, err := server.NewCerts(f.cert, f.key, server.CertsOptions{CheckInterval: 5 * time.Second})
				if err != nil {
					t.Fatal(err)
				}
				if got := servedCN(t, c); got != "first.test" {
					t.Fatalf("got %q, want first.test", got)
				}
				tt.write(t, f, second)
				if got := servedCN(t, c); got != "first.test" {
					t.Errorf("within the check interval: got %q, want first.test still", got)
				}
				time.Sleep(5 * time.Second)
				if got := servedCN(t, c); got != "second.test" {
					t.Errorf("after the check interval: got %q, want second.test", got)
				}
			})
		})
	}
}

// A certPair caught half-written (the new certificate, the old key) does not
// load: the certificate in force is kept, the failure logged once, and the
// certPair loads when the key follows.
func TestCertsHalfWrittenPairKept(t *testing.T) {
	f := newCertFiles(t)
	first, second := newCertPair(t, "first.test"), newCertPair(t, "second.test")
	f.write(t, first)
	var logs certLog
	synctest.Test(t, func(t *testing.T) {
		c, err := server.NewCerts(f.cert, f.key, server.CertsOptions{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		if err != nil {
			t.Fatal(err)
		}
		writeCert(t, f.cert, second.cert)
		for range 3 {
			time.Sleep(server.DefaultCertCheckInterval)
			if got := servedCN(t, c); got != "first.test" {
				t.Fatalf("with a mismatched certPair: got %q, want first.test kept", got)
			}
		}
		if n := strings.Count(logs.String(), "do not load"); n != 1 {
			t.Errorf("got %d failure logs over three checks of the same certFiles, want 1:\n%s", n, logs.String())
		}
		writeCert(t, f.key, second.key)
		time.Sleep(server.DefaultCertCheckInterval)
		if got := servedCN(t, c); got != "second.test" {
			t.Errorf("once the key follows: got %q, want second.test", got)
		}
	})
}

// With no periodic check, Reload reads the changed certFiles.
func TestCertsReload(t *testing.T) {
	f := newCertFiles(t)
	f.write(t, newCertPair(t, "first.test"))
	c, err := server.NewCerts(f.cert, f.key, server.CertsOptions{CheckInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reload(); err != nil {
		t.Fatalf("Reload of unchanged certFiles: %v", err)
	}
	f.write(t, newCertPair(t, "second.test"))
	if got := servedCN(t, c); got != "first.test" {
		t.Errorf("before Reload: got %q, want first.test", got)
	}
	if err := c.Reload(); err != nil {
		t.Fatal(err)
	}
	if got := servedCN(t, c); got != "second.test" {
		t.Errorf("after Reload: got %q, want second.test", got)
	}
	os.Remove(f.key)
	if err := c.Reload(); err == nil {
		t.Error("Reload with the key gone: got nil, want an error")
	}
	if got := servedCN(t, c); got != "second.test" {
		t.Errorf("after a failed Reload: got %q, want second.test kept", got)
	}
}

func TestCertsSetFiles(t *testing.T) {
	f, g := newCertFiles(t), newCertFiles(t)
	f.write(t, newCertPair(t, "first.test"))
	g.write(t, newCertPair(t, "second.test"))
	c, err := server.NewCerts(f.cert, f.key, server.CertsOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetFiles(g.cert, f.key); err == nil {
		t.Error("SetFiles to a mismatched certPair: got nil, want an error")
	}
	if got := servedCN(t, c); got != "first.test" {
		t.Errorf("after a failed SetFiles: got %q, want first.test", got)
	}
	if err := c.SetFiles(g.cert, g.key); err != nil {
		t.Fatal(err)
	}
	if got := servedCN(t, c); got != "second.test" {
		t.Errorf("after SetFiles: got %q, want second.test", got)
	}
	if cert, key := c.Files(); cert != g.cert || key != g.key {
		t.Errorf("Files: got %s %s, want %s %s", cert, key, g.cert, g.key)
	}
}

func TestNewCertsErrors(t *testing.T) {
	f := newCertFiles(t)
	if _, err := server.NewCerts(f.cert, f.key, server.CertsOptions{}); err == nil {
		t.Error("missing certFiles: got nil, want an error")
	}
	p, q := newCertPair(t, "a.test"), newCertPair(t, "b.test")
	writeCert(t, f.cert, p.cert)
	writeCert(t, f.key, q.key)
	if _, err := server.NewCerts(f.cert, f.key, server.CertsOptions{}); err == nil {
		t.Error("mismatched certPair: got nil, want an error")
	}
}

// A certificate renewed on disk (certbot, a Kubernetes Secret) is served
// from the next handshake after its files change, without a restart.
func ExampleCerts() {
	certs, err := server.NewCerts("/etc/tls/tls.crt", "/etc/tls/tls.key", server.CertsOptions{})
	if err != nil {
		log.Fatal(err) // the pair does not load
	}
	srv := &server.Server{Addr: ":443", Handler: http.NotFoundHandler(), TLSConfig: certs.TLSConfig()}
	_ = srv // srv.Run(ctx)
}

type certLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *certLog) Write(p []byte) (int, error) { s.mu.Lock(); defer s.mu.Unlock(); return s.b.Write(p) }
func (s *certLog) String() string              { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
