package cli

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"maps"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/app"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/testutil"
)

// The process: SIGHUP with an invalid file logs every error and changes
// nothing (the workers are not even rolled); with a valid one it applies
// a live key (the limit), warns of a restart-only one, and rolls the
// workers onto their new environment while requests keep being served.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	addr, adminAddr := freeAddr(t), freeAddr(t)
	yaml := `server: {listen: %q, drainDelay: 100ms, maxConcurrentRequests: %d, keepAliveTimeout: %s}
admin: {listen: %q}
workers:
  command: [/bin/sh, -c, 'SLUICE_WORKER_ID=$TAG-$SLUICE_WORKER_ID exec "$0" demo-worker', %q]
  count: 2
  concurrency: 1
  slowStart: 0s
  readyPath: %s
  env: {TAG: %s, %s: "1"}
`
	good := func(limit int, keepAlive, tag string) string {
		return fmt.Sprintf(yaml, addr, limit, keepAlive, adminAddr, os.Args[0], demo.ReadyPath, tag, runMainEnv)
	}
	path := writeConfig(t, good(100, "65s", "v1"))
	p := startSluice(t, "serve", "-c", path)
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	if code, _, body := get("http://"+addr+"/?cpu=0", 5*time.Second); code != http.StatusOK || !strings.Contains(body, "worker v1-") {
		t.Fatalf("at start: got %d %q, want 200 from a worker v1-N", code, body)
	}
	pids := func(s app.Stats) map[int]bool {
		m := map[int]bool{}
		for _, w := range s.Workers {
			m[w.PID] = true
		}
		return m
	}
	first := pids(waitStats(t, adminAddr, func(s app.Stats) bool { return len(s.Workers) == 2 && s.Admission.Limit == 4 })) // two workers of concurrency 1, one request ahead each

	rewrite(t, path, strings.Replace(good(100, "65s", "v1"), "count: 2", "count: 0", 1)+"routes: [{priority: urgent}]\n")
	p.Cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, p, "config reload failed")
	for _, want := range []string{"at=" + path + ":5 key=workers.count", "at=" + path + ":10 key=routes[0].priority"} {
		if !strings.Contains(p.Out.String(), want) {
			t.Errorf("the log lacks %q", want)
		}
	}
	if code, _, body := get("http://"+addr+"/?cpu=0", 5*time.Second); code != http.StatusOK || !strings.Contains(body, "worker v1-") {
		t.Errorf("after an invalid reload: got %d %q, want 200 from a worker v1-N", code, body)
	}
	if now := pids(waitStats(t, adminAddr, func(app.Stats) bool { return true })); !maps.Equal(now, first) {
		t.Errorf("an invalid reload rolled the workers: PIDs %v, were %v", now, first)
	}

	stopLoad := keepRequesting("http://"+addr+"/?cpu=1", 1)
	rewrite(t, path, good(1, "5s", "v2"))
	hup := time.Now()
	p.Cmd.Process.Signal(syscall.SIGHUP)
	rolled := waitStats(t, adminAddr, func(s app.Stats) bool { return replaced(s, first, 2) && s.Admission.Limit == 1 })
	// The queue held the roll's dip, and holds it a little after.
	if until := rolled.Admission.TolerateUntil; !until.After(hup) {
		t.Errorf("after the roll: the queue's tolerance ends at %v, want after the SIGHUP at %v", until, hup)
	}
	for _, f := range stopLoad() {
		t.Errorf("a request failed during the reload: %s", f)
	}
	if code, _, body := get("http://"+addr+"/?cpu=0", 5*time.Second); code != http.StatusOK || !strings.Contains(body, "worker v2-") {
		t.Errorf("after the reload: got %d %q, want 200 from a worker v2-N", code, body)
	}
	if want := `key=server.keepAliveTimeout`; !strings.Contains(p.Out.String(), want) {
		t.Errorf("the log lacks the restart-only key's warning %q", want)
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	if code := p.ExitCode(t, 15*time.Second); code != 0 {
		t.Errorf("exit code after a drain: got %d, want 0", code)
	}
}

// A renewed certificate is served after SIGHUP, without a restart.
func TestServeReloadsCertificate(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	writePair(t, certFile, keyFile, "first.test")
	addr := freeAddr(t)
	path := writeConfig(t, fmt.Sprintf("server: {listen: %q, drainDelay: 100ms, tls: {certFile: %q, keyFile: %q}}\nadmin: {listen: \"off\"}\n", addr, certFile, keyFile))
	p := startSluice(t, "serve", "-c", path)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, DisableKeepAlives: true}}
	servedCN := func() string {
		resp, err := client.Get("https://" + addr + "/__sluice/health")
		if err != nil {
			return err.Error()
		}
		resp.Body.Close()
		return resp.TLS.PeerCertificates[0].Subject.CommonName
	}
	if err := waitReadyTLS(client, "https://"+addr+"/__sluice/ready"); err != nil {
		t.Fatal(err)
	}
	if got := servedCN(); got != "first.test" {
		t.Fatalf("at start: got %q, want first.test", got)
	}
	writePair(t, certFile, keyFile, "second.test")
	p.Cmd.Process.Signal(syscall.SIGHUP)
	waitLog(t, p, "config reloaded")
	if got := servedCN(); got != "second.test" {
		t.Errorf("after SIGHUP: got %q, want second.test", got)
	}
}

func writePair(t *testing.T, certFile, keyFile, cn string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	rewrite(t, certFile, string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})))
	rewrite(t, keyFile, string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})))
}

func waitReadyTLS(c *http.Client, url string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := c.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after 10s (last error %v)", url, err)
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
}

// waitLog waits (at most 10 s) until the process has logged s.
func waitLog(t *testing.T, p *testutil.Process, s string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !strings.Contains(p.Out.String(), s); {
		if time.Now().After(deadline) {
			t.Fatalf("the log never said %q", s)
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
}
