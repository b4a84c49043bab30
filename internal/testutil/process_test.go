//go:build unix

package testutil_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// bound caps every wait on a child process here.
const bound = 10 * time.Second

// recorder is a testing.TB whose failures and cleanups the test reads,
// for the behaviour of StartProcess's cleanup.
type recorder struct {
	testing.TB
	cleanups []func()
	errors   []string
	logs     []string
}

func (r *recorder) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *recorder) Errorf(format string, a ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, a...))
}
func (r *recorder) Logf(format string, a ...any) { r.logs = append(r.logs, fmt.Sprintf(format, a...)) }
func (r *recorder) Failed() bool                 { return len(r.errors) > 0 }
func (r *recorder) Helper()                      {}

func (r *recorder) cleanup() {
	for i := len(r.cleanups) - 1; i >= 0; i-- {
		r.cleanups[i]()
	}
}

func TestProcessOutputAndExitCode(t *testing.T) {
	p := testutil.StartProcess(t, exec.Command("sh", "-c", "echo out; echo err >&2; exit 3"), 0)
	if got := p.ExitCode(t, bound); got != 3 {
		t.Errorf("exit code: got %d, want 3", got)
	}
	if got := p.Out.String(); !strings.Contains(got, "out\n") || !strings.Contains(got, "err\n") {
		t.Errorf("output: got %q, want stdout and stderr", got)
	}
	if p.Running() || p.Err() == nil {
		t.Errorf("after exit: Running %v, Err %v; want false and an exit error", p.Running(), p.Err())
	}
}

// Stop ends a process that honours SIGTERM within its grace, and kills one
// that does not when the grace is over.
func TestProcessStop(t *testing.T) {
	p := testutil.StartProcess(t, exec.Command("sleep", "60"), 0)
	if !p.Stop(bound) {
		t.Error("sleep did not exit on SIGTERM")
	}
	// The shell ignores TERM; it says so once the trap is set.
	stubborn := testutil.StartProcess(t, exec.Command("sh", "-c", `trap "" TERM; echo ready; while :; do sleep 1; done`), 0)
	waitOutput(t, stubborn, "ready")
	if stubborn.Stop(100 * time.Millisecond) {
		t.Error("Stop reported a clean exit of a process that ignores SIGTERM")
	}
	if stubborn.Running() {
		t.Error("still running after Stop's grace, want killed")
	}
}

// When the test ends, the cleanup kills a process still running, fails the
// test if it outlived its grace after SIGTERM, and then logs its output.
func TestProcessCleanup(t *testing.T) {
	tests := []struct {
		name       string
		script     string
		grace      time.Duration
		wantErrors int
	}{
		{"kill at once", `echo ready; exec sleep 60`, 0, 0},
		{"honours SIGTERM", `echo ready; exec sleep 60`, bound, 0},
		{"ignores SIGTERM", `trap "" TERM; echo ready; while :; do sleep 1; done`, 100 * time.Millisecond, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &recorder{TB: t}
			p := testutil.StartProcess(r, exec.Command("sh", "-c", tt.script), tt.grace)
			waitOutput(t, p, "ready")
			r.cleanup()
			if p.Running() {
				t.Fatal("still running after the cleanup")
			}
			if len(r.errors) != tt.wantErrors {
				t.Errorf("got errors %q, want %d", r.errors, tt.wantErrors)
			}
			if wantLog := tt.wantErrors > 0; wantLog != (len(r.logs) == 1 && strings.Contains(r.logs[0], "ready")) {
				t.Errorf("got logs %q, want the output logged: %v", r.logs, wantLog)
			}
		})
	}
}

// waitOutput polls p's output for s: another process's output has no
// event to wait on.
func waitOutput(t *testing.T, p *testutil.Process, s string) {
	t.Helper()
	for deadline := time.Now().Add(bound); !strings.Contains(p.Out.String(), s); {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the output within %v: %q", s, bound, p.Out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestWaitOK(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) < 3 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := testutil.WaitOK(ctx, srv.URL, nil); err != nil || calls.Load() != 3 {
		t.Errorf("got %v after %d calls, want nil after 3 (two 503s)", err, calls.Load())
	}

	exited := make(chan struct{})
	close(exited)
	down := "http://" + testutil.FreeAddr(t)
	if err := testutil.WaitOK(ctx, down, exited); !errors.Is(err, testutil.ErrExited) {
		t.Errorf("exited: got %v, want ErrExited", err)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancelShort()
	if err := testutil.WaitOK(short, down, nil); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("ctx done: got %v, want context.DeadlineExceeded", err)
	}
}

func TestFreeAddr(t *testing.T) {
	addr := testutil.FreeAddr(t)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on FreeAddr's %s: %v", addr, err)
	}
	ln.Close()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("got %s, want a loopback address", addr)
	}
}

// FreeAddr never hands out one address twice: a child given a main and an
// admin listener must get two.
func TestFreeAddrDistinct(t *testing.T) {
	seen := map[string]bool{}
	for range 500 {
		addr := testutil.FreeAddr(t)
		if seen[addr] {
			t.Fatalf("FreeAddr returned %s twice", addr)
		}
		seen[addr] = true
	}
}

// Get reads the whole answer on a connection of its own; no answer is
// status 0 with the error's text.
func TestGet(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		w.Write([]byte("short and stout"))
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	for range 2 {
		if code, body := testutil.Get(context.Background(), srv.URL); code != http.StatusTeapot || body != "short and stout" {
			t.Errorf("got %d %q, want 418 and the body", code, body)
		}
	}
	if got := conns.Load(); got != 2 {
		t.Errorf("got %d connections for 2 GETs, want one each", got)
	}
	if code, body := testutil.Get(context.Background(), "http://"+testutil.FreeAddr(t)); code != 0 || body == "" {
		t.Errorf("to nothing: got %d %q, want 0 and the error", code, body)
	}
}
