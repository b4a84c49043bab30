//go:build unix

package testutil

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Redis is a redis-server a test started with StartRedis: on a port of its
// own, in a temporary directory, persisting nothing.
type Redis struct {
	tb   testing.TB
	bin  string
	dir  string
	Addr string // 127.0.0.1:port
	proc *Process
}

// StartRedis starts redis-server for the test and stops it when the test
// ends. Without redis-server on the PATH it skips the test, or fails it
// under CI (see Missing).
func StartRedis(tb testing.TB) *Redis {
	tb.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		Missing(tb, "redis-server not found; install the Debian package redis-server to run this test: "+err.Error())
	}
	r := &Redis{tb: tb, bin: bin, dir: tb.TempDir(), Addr: FreeAddr(tb)}
	r.Start()
	return r
}

// URL is the server's redis:// URL.
func (r *Redis) URL() string { return "redis://" + r.Addr + "/0" }

// Start starts the server again after Stop, on the same address, empty.
func (r *Redis) Start() {
	r.tb.Helper()
	_, port, _ := net.SplitHostPort(r.Addr)
	cmd := exec.Command(r.bin, "--port", port, "--bind", "127.0.0.1", "--dir", r.dir,
		"--save", "", "--appendonly", "no", "--protected-mode", "yes")
	r.proc = StartProcess(r.tb, cmd, 5*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := r.waitPong(ctx); err != nil {
		r.tb.Fatalf("redis-server on %s: %v\n%s", r.Addr, err, r.proc.Out.Tail(4096))
	}
}

// Stop stops the server (SIGTERM) and waits for it to exit.
func (r *Redis) Stop() {
	r.tb.Helper()
	if !r.proc.Stop(5 * time.Second) {
		r.tb.Errorf("redis-server on %s still running 5 s after SIGTERM; killed", r.Addr)
	}
}

// waitPong polls the server with PING, every 20 ms, until it answers: a
// process has no other way to say it is ready.
func (r *Redis) waitPong(ctx context.Context) error {
	for {
		if r.ping() == nil {
			return nil
		}
		select {
		case <-r.proc.Done():
			return ErrExited
		case <-ctx.Done():
			return fmt.Errorf("no PONG: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (r *Redis) ping() error {
	c, err := net.DialTimeout("tcp", r.Addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING answered %q", line)
	}
	return nil
}
