package supervisor

import (
	"errors"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

func TestCommandExecutable(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("not checked on Windows")
	}
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("run.sh", 0o755)
	write("app.js", 0o644)
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "mytool"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		c       Command
		wantErr string // "" for nil
	}{
		{"in PATH", Command{Args: []string{"sh", "-c", "true"}}, ""},
		{"not in PATH", Command{Args: []string{"nodee-sluice-test", "app.js"}}, `worker command "nodee-sluice-test": not found in $PATH`},
		{"absolute", Command{Args: []string{filepath.Join(dir, "run.sh")}}, ""},
		{"relative to Dir", Command{Args: []string{"./run.sh"}, Dir: dir}, ""},
		{"relative, missing", Command{Args: []string{"./missing.sh"}, Dir: dir}, "missing.sh: no such file"},
		{"not executable", Command{Args: []string{"./app.js"}, Dir: dir}, "(-rw-r--r--) is not executable: chmod +x it, or put its interpreter first (node app.js)"},
		{"a directory", Command{Args: []string{dir}}, "is a directory"},
		{"the command's own PATH", Command{Args: []string{"mytool"}, Env: []string{"PATH=/nowhere", "PATH=" + bin}}, ""},
		{"the command's own PATH, without it", Command{Args: []string{"sh"}, Env: []string{"PATH=" + bin}}, `"sh": not found in $PATH`},
		{"empty", Command{}, "Command is empty"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Executable()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("got %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("got %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// A program that cannot be started is an error before anything starts,
// and a reload's SetCommand refuses it.
func TestNewRefusesACommandThatCannotStart(t *testing.T) {
	e := newFakeEnv(&recorder{})
	e.execErr = errors.New(`supervisor: worker command "nodee": not found in $PATH`)
	_, err := newSupervisor(newFakeBalancer(e.rec), Options{Command: []string{"nodee"}}, e.env())
	if err == nil || !strings.Contains(err.Error(), "nodee") {
		t.Errorf("newSupervisor: got %v, want the executable error", err)
	}
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, Command: []string{"old"}}, nil)
		h.env.mu.Lock()
		h.env.execErr = errors.New("not found")
		h.env.mu.Unlock()
		if _, err := h.sup.SetCommand(Command{Args: []string{"nodee"}}); err == nil {
			t.Error("SetCommand of a program that cannot start: got nil error")
		}
		if got := h.sup.Command(); !slices.Equal(got.Args, []string{"old"}) {
			t.Errorf("after a refused SetCommand: Command() = %v, want the old one kept", got.Args)
		}
	})
}

// A worker that listens elsewhere than $PORT is named within
// readyHintAfter, long before StartTimeout; when the start fails, the one
// line logged for it (the restart) carries the hint too.
func TestNotReadyHint(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1}, func(f *fakeEnv) {
			f.notReadyAll = true
			f.listen = []string{"127.0.0.1:20001", "[::]:3000"}
		})
		time.Sleep(readyHintAfter + DefaultReadyInterval) // the first check past it
		synctest.Wait()
		wantHint := "is it listening on $PORT (20001)? It listens on [::]:3000: read the port from the PORT environment variable"
		if got := h.logs.attrs(slog.LevelWarn, "worker not ready yet", "hint"); !slices.Equal(got, []string{wantHint}) {
			t.Errorf("after %v: got warnings with hints %q, want one: %q", readyHintAfter, got, wantHint)
		}
		time.Sleep(DefaultStartTimeout - readyHintAfter - DefaultReadyInterval)
		synctest.Wait()
		exits := h.logs.attrs(slog.LevelWarn, "worker exited; restarting", "exit")
		if len(exits) != 1 || !strings.Contains(exits[0], "not ready within 30s") || !strings.Contains(exits[0], wantHint) {
			t.Errorf("the restart: got %q, want one line with the reason and the hint", exits)
		}
		if n := h.logs.count(slog.LevelWarn, "worker"); n != 2 {
			t.Errorf("got %d warnings about the worker, want 2: not ready yet, and the restart", n)
		}
	})
}

// A worker that answers its ready path with an error listens where it
// was told: the hint is about the path.
func TestNotReadyHintReadyPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := startHarness(t, Options{Count: 1, ReadyPath: "/healthz", StartTimeout: 2 * time.Second}, func(f *fakeEnv) { f.notReadyAll = true })
		time.Sleep(2 * time.Second)
		synctest.Wait()
		exits := h.logs.attrs(slog.LevelWarn, "worker exited; restarting", "exit")
		want := "GET /healthz answered 503 service unavailable (it listens, but does not answer GET /healthz with 2xx: is that its ready path?)"
		if len(exits) != 1 || !strings.Contains(exits[0], want) {
			t.Errorf("got %q, want one restart saying %q", exits, want)
		}
	})
}

// listeningAddrs finds a socket this process listens on, by its process
// group.
func TestListeningAddrs(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	got := listeningAddrs(syscall.Getpgrp())
	if !slices.Contains(got, ln.Addr().String()) {
		t.Errorf("got %q, want it to hold %s", got, ln.Addr())
	}
}
