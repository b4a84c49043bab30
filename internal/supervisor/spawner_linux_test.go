package supervisor

import (
	"bytes"
	"io"
	"os"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// startFromDyingThread starts a sleeping process from a goroutine locked to
// a thread (not the main thread) that exits right after, through sp or, if
// sp is nil, directly.
func startFromDyingThread(t *testing.T, sp *spawner) process {
	t.Helper()
	spec := procSpec{
		Path:   os.Args[0],
		Args:   []string{os.Args[0]},
		Env:    append(os.Environ(), "SLUICE_TEST_ROLE=sleep", "GORACE=atexit_sleep_ms=0"),
		Stdout: io.Discard,
		Stderr: io.Discard,
	}
	type result struct {
		p   process
		err error
	}
	ch := make(chan result)
	var try func()
	try = func() {
		runtime.LockOSThread()
		if syscall.Gettid() == os.Getpid() {
			// The main thread is never destroyed: try from another.
			runtime.UnlockOSThread()
			go try()
			return
		}
		// Never unlocked: this thread ends with the goroutine.
		var r result
		if sp != nil {
			sp.do(func() { r.p, r.err = startProcess(spec) })
		} else {
			r.p, r.err = startProcess(spec)
		}
		ch <- r
	}
	go try()
	r := <-ch
	if r.err != nil {
		t.Fatalf("start: %v", r.err)
	}
	return r.p
}

// Pdeathsig follows the forking thread (Go issue #27505): a worker forked
// from a thread that then exits is killed. The spawner's thread outlives
// the goroutines that ask it to start workers.
func TestSpawnerThreadOutlivesCallers(t *testing.T) {
	sp := newSpawner()
	defer sp.stop()
	viaSpawner := startFromDyingThread(t, sp)
	t.Cleanup(func() {
		viaSpawner.Signal(syscall.SIGKILL)
		viaSpawner.Wait()
	})
	direct := startFromDyingThread(t, nil)
	t.Cleanup(func() { direct.Signal(syscall.SIGKILL) })

	// The hazard is real: the directly started process dies with its thread.
	exited := make(chan error, 1)
	go func() { exited <- direct.Wait() }()
	select {
	case err := <-exited:
		if err == nil || err.Error() != "signal: killed" {
			t.Fatalf("directly started process: got exit %v, want signal: killed", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("directly started process still running 20s after its thread exited")
	}
	// Its thread exited after the spawner's caller's did: had the spawner
	// not kept the process on its own thread, it would be dead by now too.
	if state := procState(t, viaSpawner.Pid()); state == 'Z' {
		t.Errorf("process started through the spawner: got state %c, want it running", state)
	}
}

// procState returns the state letter of our child pid from /proc.
func procState(t *testing.T, pid int) byte {
	t.Helper()
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatalf("read state of %d: %v", pid, err)
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		t.Fatalf("state of %d: cannot parse %q", pid, stat)
	}
	return stat[i+2]
}
