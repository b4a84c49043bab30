package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// bound caps every wait on sluice and the browser: generous for two loaded
// cores, short enough that a hang fails the test instead of stalling CI.
const bound = 30 * time.Second

// sluiceBin is the sluice binary TestMain built from the parent module.
var sluiceBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	build := exec.CommandContext(ctx, "go", "build", "-o", sluiceBin, "./cmd/sluice")
	build.Dir = ".." // sluice's own module, not this one
	out, err := build.CombinedOutput()
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/sluice: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sluice is a running `sluice serve`.
type sluice struct {
	addr, admin string
	out         *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// startSluice runs `sluice serve` with config (a format string given the
// listen address, the admin address and the binary, for its demo workers)
// and waits until it is ready. It is drained with SIGTERM when the test
// ends, and its process group killed if that takes longer than bound.
func startSluice(t *testing.T, config string) *sluice {
	t.Helper()
	s := &sluice{addr: freeAddr(t), admin: freeAddr(t), out: &syncBuffer{}}
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, config, s.addr, s.admin, sluiceBin), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sluiceBin, "serve", "-c", path)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(bound):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		if t.Failed() {
			t.Logf("sluice output:\n%s", s.out)
		}
	})
	if err := waitOK("http://"+s.addr+"/__sluice/ready", done); err != nil {
		t.Fatalf("%v\n%s", err, s.out)
	}
	return s
}

// waitOK polls url until it answers 200, the process exits, or bound
// passes.
func waitOK(url string, exited <-chan struct{}) error {
	c := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(bound)
	for {
		if resp, err := c.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("sluice exited before it was ready")
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s not ready after %v", url, bound)
		}
		time.Sleep(50 * time.Millisecond) // polling another process
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// load sends GETs to url from clients goroutines until ctx is done, and
// returns a func that stops them and waits. Every request is bounded by a
// client timeout; responses are read and dropped.
func load(ctx context.Context, url string, clients int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	c := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				var buf [512]byte
				for {
					if _, err := resp.Body.Read(buf[:]); err != nil {
						break
					}
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					// Paced, not a tight loop of cheap 503s: the
					// two cores are shared with sluice and Chromium.
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}
