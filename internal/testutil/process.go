//go:build unix

package testutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// logTail is how much of a failed test's child output is logged: the end,
// where a process says why it stopped.
const logTail = 64 << 10

// BuildSluice builds the sluice command of the module at root (a path to
// the repository's root directory) into out, without the race detector, so
// that its timings and memory are sluice's own. It is meant for TestMain
// or a sync.Once: a build takes seconds.
func BuildSluice(root, out string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// One package at a time: the tests that need the binary run beside
	// others on a machine of few cores.
	cmd := exec.CommandContext(ctx, "go", "build", "-p", "1", "-o", out, "./cmd/sluice")
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, b)
	}
	return nil
}

// Process is a child process a test started with StartProcess.
type Process struct {
	Cmd *exec.Cmd
	// Out holds what the process wrote to stdout and stderr.
	Out  *Buffer
	done chan struct{} // closed when Wait has returned
	err  error         // Wait's result, set before done is closed
}

// StartProcess starts cmd in a process group of its own, its stdout and
// stderr into Out. When the test ends, a process still running is
// stopped: with grace > 0 by SIGTERM, failing the test if it has not
// exited within grace; then, or at once with grace 0, by SIGKILL to its
// whole group, which takes its children too. The end of its output is
// logged if the test failed.
func StartProcess(tb testing.TB, cmd *exec.Cmd, grace time.Duration) *Process {
	tb.Helper()
	p := &Process{Cmd: cmd, Out: &Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.Out, p.Out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start %s: %v", cmd.Path, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	tb.Cleanup(func() {
		if grace > 0 && !p.Stop(grace) {
			tb.Errorf("%s (pid %d) still running %v after SIGTERM; killed its group", cmd.Args[0], p.PID(), grace)
		}
		p.Kill()
		if tb.Failed() {
			tb.Logf("output of %s (the last %d KiB):\n%s", strings.Join(cmd.Args, " "), logTail>>10, p.Out.Tail(logTail))
		}
	})
	return p
}

// PID is the process's id, and its group's.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Done is closed when the process has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// Err is the process's exit as exec.Cmd.Wait returned it; nil while it
// runs.
func (p *Process) Err() error {
	select {
	case <-p.done:
		return p.err
	default:
		return nil
	}
}

// Running reports whether the process has not exited yet.
func (p *Process) Running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits up to grace for the process to exit,
// killing its group after that. It reports whether the process exited
// within grace (or had already).
func (p *Process) Stop(grace time.Duration) bool {
	if !p.Running() {
		return true
	}
	p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		p.Kill()
		return false
	}
}

// Kill sends SIGKILL to the process's group, unless it has exited, and
// waits for it.
func (p *Process) Kill() {
	if p.Running() {
		syscall.Kill(-p.PID(), syscall.SIGKILL)
	}
	<-p.done
}

// ExitCode waits up to within for the process to exit and returns its exit
// code (-1 if a signal ended it), failing the test if it still runs.
func (p *Process) ExitCode(tb testing.TB, within time.Duration) int {
	tb.Helper()
	select {
	case <-p.done:
		return p.Cmd.ProcessState.ExitCode()
	case <-time.After(within):
		tb.Fatalf("%s (pid %d) still running after %v", p.Cmd.Args[0], p.PID(), within)
		return -1
	}
}

// ErrExited is WaitOK's error when the process exited first.
var ErrExited = errors.New("testutil: the process exited before it was ready")

// WaitOK polls url until it answers 200, and returns nil; or ErrExited
// once exited is closed, or ctx's error. A process has no other way to
// say it is ready than to answer, so this polls, every 20 ms, each GET on
// a new connection and bounded by a second.
func WaitOK(ctx context.Context, url string, exited <-chan struct{}) error {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := c.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return ErrExited
		case <-ctx.Done():
			return fmt.Errorf("%s not ready: %w", url, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// FreeAddr returns 127.0.0.1:port with a port nothing listened on a moment
// ago, for a child process to listen on. It is racy: between the listener
// closed here and the child's bind, another process may take the port, and
// the child then fails to start. Use a listener of the test's own
// (net.Listen on port 0) wherever the test itself serves.
//
// No two calls in one process return the same port: the kernel may hand
// a port just closed to the next listener on port 0, and a test that took
// two addresses for one child (its main and admin listeners) then gave it
// the same one twice, and the child could not start.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	handedMu.Lock()
	defer handedMu.Unlock()
	for range 100 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		if !handed[addr] {
			handed[addr] = true
			return addr
		}
	}
	tb.Fatal("testutil: FreeAddr: every free port offered had been handed out before")
	return ""
}

var (
	handedMu sync.Mutex
	handed   = map[string]bool{} // the addresses FreeAddr returned
)

// Get sends GET url on a connection of its own and returns the status and
// body; status 0 and the error's text when there was no answer. A new
// connection per call keeps a test's probes from holding one open that a
// server under test would count, drain or wait for.
func Get(ctx context.Context, url string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	tr := &http.Transport{DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// MainWithSluice is the body of a TestMain for tests of the sluice
// binary: it builds it (BuildSluice of root, the repository's root
// directory) into a new temporary directory, sets *bin to its path, runs
// the tests and removes the directory. It returns the exit code for
// os.Exit; 1 if the build failed, having said why on stderr.
func MainWithSluice(m *testing.M, root string, bin *string) int {
	dir, err := os.MkdirTemp("", "sluice-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	*bin = filepath.Join(dir, "sluice")
	if err := BuildSluice(root, *bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}
