package server

import (
	"crypto/tls"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultCertCheckInterval is how often Certs looks at its files, at most:
// a renewed certificate is served within seconds, and a busy listener's
// handshakes cost two stat calls per interval, not per handshake.
const DefaultCertCheckInterval = 5 * time.Second

// CertsOptions configure Certs. The zero value works.
type CertsOptions struct {
	// CheckInterval is the least time between two looks at the files'
	// size, modification time and identity. Zero means
	// DefaultCertCheckInterval; negative means the files are read again
	// only by Reload and SetFiles.
	CheckInterval time.Duration
	// Logger receives each certificate loaded and each pair that could not
	// be. Nil means none.
	Logger *slog.Logger
}

// Validate reports the options that are wrong; there are none yet: every
// value has a meaning.
func (o CertsOptions) Validate() error { return nil }

// Certs serves a certificate and its key from PEM files and reads them
// again when they change, so that a renewed certificate (certbot, a
// Kubernetes Secret, cert-manager) is served without a restart. Use it as
// tls.Config.GetCertificate (see TLSConfig).
//
// The files are looked at during a handshake, at most once per
// CheckInterval: when either one's size, modification time or identity
// (a rename or a symlink swap, as Kubernetes does) has changed, the pair is
// read again. A pair that does not load (the certificate written but not
// yet its key, a key that does not match) is logged and the certificate in
// force is kept; the next change is tried again.
//
// Create it with NewCerts; the zero value is not usable. Safe for
// concurrent use; GetCertificate never blocks on a reading in progress.
type Certs struct {
	interval time.Duration
	log      *slog.Logger

	cur  atomic.Pointer[loadedPair]
	next atomic.Int64 // UnixNano of the next look at the files

	mu sync.Mutex // serialises looks and loads
	// failed is the stamp of the last pair that did not load, so that a
	// broken pair is logged once, not every interval.
	failed *pairStamp
}

// loadedPair is a certificate and the files it was read from.
type loadedPair struct {
	certFile, keyFile string
	cert              *tls.Certificate
	stamp             pairStamp
}

// pairStamp identifies a version of the two files.
type pairStamp struct{ cert, key os.FileInfo }

func (a pairStamp) same(b pairStamp) bool { return sameFile(a.cert, b.cert) && sameFile(a.key, b.key) }

func sameFile(a, b os.FileInfo) bool {
	if a == nil || b == nil {
		return a == b
	}
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// NewCerts reads the pair at certFile and keyFile and returns a Certs
// serving it, or the reason it does not load.
func NewCerts(certFile, keyFile string, o CertsOptions) (*Certs, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	c := &Certs{interval: o.CheckInterval, log: o.Logger}
	if c.interval == 0 {
		c.interval = DefaultCertCheckInterval
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	p, err := loadPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	c.cur.Store(p)
	c.schedule(time.Now())
	return c, nil
}

func loadPair(certFile, keyFile string) (*loadedPair, error) {
	st, err := stampOf(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("server: certificate %s, key %s: %w", certFile, keyFile, err)
	}
	return &loadedPair{certFile: certFile, keyFile: keyFile, cert: &cert, stamp: st}, nil
}

func stampOf(certFile, keyFile string) (pairStamp, error) {
	cs, err := os.Stat(certFile)
	if err != nil {
		return pairStamp{}, fmt.Errorf("server: certificate: %w", err)
	}
	ks, err := os.Stat(keyFile)
	if err != nil {
		return pairStamp{}, fmt.Errorf("server: key: %w", err)
	}
	return pairStamp{cs, ks}, nil
}

// GetCertificate returns the certificate in force, first reading the files
// again if they changed and CheckInterval has passed since the last look.
// It has tls.Config.GetCertificate's signature and never fails once
// NewCerts has succeeded.
func (c *Certs) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if c.interval > 0 {
		if now := time.Now(); now.UnixNano() >= c.next.Load() && c.mu.TryLock() {
			// Another handshake holding the lock is looking already: this
			// one is served the certificate in force rather than wait.
			if now.UnixNano() >= c.next.Load() {
				c.lookLocked(false)
				c.schedule(now)
			}
			c.mu.Unlock()
		}
	}
	return c.cur.Load().cert, nil
}

// TLSConfig returns a TLS configuration serving c's certificate, for
// Server.TLSConfig.
func (c *Certs) TLSConfig() *tls.Config { return &tls.Config{GetCertificate: c.GetCertificate} }

// Reload reads the files again now if they changed since the pair in
// force was read (a reload of the configuration calls it), and returns why
// a changed pair did not load; the certificate in force is then kept.
func (c *Certs) Reload() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer c.schedule(time.Now())
	return c.lookLocked(true)
}

// SetFiles switches to the pair at certFile and keyFile. On failure the
// pair in force is kept and the error says why.
func (c *Certs) SetFiles(certFile, keyFile string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, err := loadPair(certFile, keyFile)
	if err != nil {
		return err
	}
	c.install(p)
	return nil
}

// Files returns the certificate and key files in force.
func (c *Certs) Files() (certFile, keyFile string) {
	p := c.cur.Load()
	return p.certFile, p.keyFile
}

// lookLocked reads the pair again if its files changed. loud reports (and
// returns) a failure that was already logged.
func (c *Certs) lookLocked(loud bool) error {
	cur := c.cur.Load()
	st, err := stampOf(cur.certFile, cur.keyFile)
	if err == nil && st.same(cur.stamp) {
		return nil
	}
	var p *loadedPair
	if err == nil {
		p, err = loadPair(cur.certFile, cur.keyFile)
	}
	if err != nil {
		// A stat error has no stamp: it is logged every interval, as a
		// missing file should be.
		if loud || c.failed == nil || !c.failed.same(st) || st.cert == nil {
			c.log.Error("server: the certificate files changed but do not load; serving the previous certificate", "err", err)
		}
		c.failed = &st
		return err
	}
	c.install(p)
	return nil
}

func (c *Certs) install(p *loadedPair) {
	c.cur.Store(p)
	c.failed = nil
	attrs := []any{"cert", p.certFile}
	if leaf := p.cert.Leaf; leaf != nil {
		attrs = append(attrs, "subject", leaf.Subject.String(), "notAfter", leaf.NotAfter)
	}
	c.log.Info("server: certificate loaded", attrs...)
}

func (c *Certs) schedule(now time.Time) {
	if c.interval > 0 {
		c.next.Store(now.Add(c.interval).UnixNano())
	}
}
