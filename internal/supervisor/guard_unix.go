//go:build unix

package supervisor

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"syscall"
)

// The guard keeps a worker's descendants from outliving sluice.
//
// Pdeathsig reaches the worker's main process only: when sluice is killed
// with SIGKILL, a worker started as `sh -c ...` or `npm start` dies, and
// the server it started (node) lives on, reparented to init, holding its
// port. Nothing in the kernel signals a process group when a process dies,
// and a subreaper only inherits orphans while it lives. So with
// Options.Guard each worker runs under a guard: a copy of the sluice
// binary, leader of the worker's process group, that starts the command
// as its child in the same group and blocks reading a pipe (the lifeline)
// whose only write end sluice holds. When sluice dies, by whatever means,
// the kernel closes that end, the read returns, and the guard sends
// SIGKILL to its whole group: the command and every descendant that stayed
// in the group. Signals from the supervisor go to the group as before and
// so reach the command directly; the guard ignores them, and when the
// command exits the guard exits the same way (same code, or the same
// signal), so the supervisor sees the command's exit.
//
// What it cannot reach: a descendant that left the group (setsid, a
// double-forking daemon), and the command's descendants if the guard
// itself is killed while sluice lives (sluice then kills the group).

// guardEnv marks a process started as a guard; its value is the lifeline's
// file descriptor.
const guardEnv = "SLUICE_GUARD_LIFELINE"

// GuardMain runs the worker guard and exits when the process was started as
// one (see Options.Guard); otherwise it returns at once. A program that
// names itself as Options.Guard calls it first thing in main.
func GuardMain() {
	if os.Getenv(guardEnv) == "" {
		return
	}
	os.Exit(runGuard(os.Args[1:]))
}

func runGuard(args []string) int {
	lifeline := os.NewFile(3, "lifeline")
	os.Unsetenv(guardEnv)
	if len(args) == 0 || lifeline == nil {
		fmt.Fprintln(os.Stderr, "sluice guard: no command or no lifeline")
		return 127
	}
	syscall.CloseOnExec(3)
	// The command's own parent-death signal follows this thread.
	runtime.LockOSThread()
	// Caught, not ignored: an ignored disposition would pass to the
	// command through exec. Every signal sent to the group reaches the
	// command itself.
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE, syscall.SIGALRM,
		syscall.SIGTSTP, syscall.SIGTTIN, syscall.SIGTTOU)
	go func() {
		for range sigs {
		}
	}()

	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, os.Stdout, os.Stderr
	cmd.SysProcAttr = guardChildAttr()
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice guard:", err)
		return 127
	}
	go func() {
		// Nothing is ever written: this returns when sluice is gone.
		io.Copy(io.Discard, lifeline)
		syscall.Kill(0, syscall.SIGKILL) // the whole group, this guard included
	}()
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice guard:", err)
			return 127
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		// Die of the same signal, so that the supervisor logs it.
		signal.Reset(ws.Signal())
		raise(ws.Signal())            // on this thread, locked above
		return 128 + int(ws.Signal()) // when it cannot kill this process: started with the signal ignored (nohup)
	}
	return ee.ExitCode()
}
