package eval

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	tests := []struct {
		name string
		line string
		want procStat
		ok   bool
	}{
		{
			"plain",
			"1234 (nginx) S 1 1234 1234 0 -1 4194560 100 0 0 0 25 7 3 1 20 0 1 0 100 0 0",
			procStat{pid: 1234, ppid: 1, pgrp: 1234, utime: 25, stime: 7, cutime: 3, cstime: 1}, true,
		},
		{
			"a command name with spaces and parentheses",
			"99 (a (b) c) R 1 42 42 0 -1 0 0 0 0 0 10 20 30 40 20 0 1 0 100 0 0",
			procStat{pid: 99, ppid: 1, pgrp: 42, utime: 10, stime: 20, cutime: 30, cstime: 40}, true,
		},
		{"truncated", "99 (x) R 1 42", procStat{}, false},
		{"no name", "garbage", procStat{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseStat([]byte(tt.line))
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("got %+v, %v, want %+v, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestGroupCPUTimeSumsOnlyTheGroup(t *testing.T) {
	root := t.TempDir()
	stats := map[string]string{
		"10": "10 (leader) S 1 10 10 0 -1 0 0 0 0 0 100 50 10 0 20 0 1 0 1 0 0",
		"11": "11 (child) S 10 10 10 0 -1 0 0 0 0 0 30 20 0 0 20 0 1 0 1 0 0",
		"12": "12 (other) S 1 12 12 0 -1 0 0 0 0 0 999 999 0 0 20 0 1 0 1 0 0",
	}
	for pid, line := range stats {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// (100+50+10) + (30+20) ticks of 10 ms.
	if got, want := groupCPUTime(root, 10), 2100*time.Millisecond; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestSupervisedCPUSplitsTheSupervisorAndItsWorkers(t *testing.T) {
	root := t.TempDir()
	stats := map[string]string{
		"10": "10 (sluice) S 1 10 10 0 -1 0 0 0 0 0 100 50 7 3 20 0 1 0 1 0 0",  // reaped workers: 7+3
		"11": "11 (sluice) S 10 11 11 0 -1 0 0 0 0 0 1 1 0 0 20 0 1 0 1 0 0",    // a guard, leading its worker's group
		"12": "12 (node) S 11 11 11 0 -1 0 0 0 0 0 30 20 5 5 20 0 1 0 1 0 0",    // its worker
		"13": "13 (node) S 10 13 13 0 -1 0 0 0 0 0 40 10 0 0 20 0 1 0 1 0 0",    // a worker without a guard
		"14": "14 (other) S 1 14 14 0 -1 0 0 0 0 0 999 999 0 0 20 0 1 0 1 0 0",  // not ours
		"15": "15 (other) S 13 15 15 0 -1 0 0 0 0 0 999 999 0 0 20 0 1 0 1 0 0", // left the worker's group
	}
	for pid, line := range stats {
		if err := os.MkdirAll(filepath.Join(root, pid), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, pid, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	own, workers := supervisedCPU(root, 10)
	// own: 100+50 ticks of 10 ms; workers: (7+3) + (1+1) + (30+20+5+5) + (40+10).
	if own != 1500*time.Millisecond || workers != 1220*time.Millisecond {
		t.Errorf("got own %v, workers %v; want 1.5s and 1.22s", own, workers)
	}
}

// waitExit waits up to d for process pid (not necessarily our child) to
// terminate, by polling a pidfd, which becomes readable when it does. It
// reports whether the process is gone.
func waitExit(t *testing.T, pid int, d time.Duration) bool {
	t.Helper()
	const sysPidfdOpen = 434 // the same number on every Linux architecture
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return true
	}
	if errno != 0 {
		t.Skipf("pidfd_open: %v", errno)
	}
	defer syscall.Close(int(fd))
	var set syscall.FdSet
	set.Bits[fd/64] |= 1 << (fd % 64)
	tv := syscall.NsecToTimeval(d.Nanoseconds())
	for {
		n, err := syscall.Select(int(fd)+1, &set, nil, nil, &tv)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			t.Fatalf("select: %v", err)
		}
		return n > 0
	}
}

func TestProcessStopEndsTheWholeGroup(t *testing.T) {
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "child.pid")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	// The shell ignores SIGTERM, so Stop must escalate to SIGKILL; its
	// background child must go with it.
	p, err := StartProcess("sh", filepath.Join(dir, "log"), nil, "/bin/sh", "-c",
		`trap "" TERM; sleep 30 & echo $! > `+fifo+`; wait`)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(0) })
	b, err := os.ReadFile(fifo) // blocks until the shell has written and closed it
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("the shell wrote %q, want its child's PID", b)
	}
	p.Stop(100 * time.Millisecond)
	select {
	case <-p.Exited():
	default:
		t.Fatal("Stop returned before the leader exited")
	}
	if !waitExit(t, child, 5*time.Second) {
		syscall.Kill(child, syscall.SIGKILL)
		t.Errorf("the leader's child %d survived Stop", child)
	}
	p.Stop(time.Second) // a second Stop is harmless
}

func TestStartProcessErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := StartProcess("none", filepath.Join(dir, "log"), nil); err == nil {
		t.Error("an empty command: got no error, want one")
	}
	if _, err := StartProcess("missing", filepath.Join(dir, "log"), nil, filepath.Join(dir, "no-such-binary")); err == nil {
		t.Error("a missing binary: got no error, want one")
	}
}

func TestMachineCPUTime(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stat")
	// user nice system idle iowait irq softirq steal guest guest_nice
	stat := "cpu  100 10 50 9999 77 5 5 3 40 2\ncpu0 1 1 1 1 1 1 1 1 1 1\n"
	if err := os.WriteFile(path, []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	// 100 + 10 + 50 + 3 ticks: idle, iowait, interrupts and guest time
	// left out.
	if got, want := machineCPUTime(path), 1630*time.Millisecond; got != want {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := machineCPUTime(filepath.Join(t.TempDir(), "missing")); got != 0 {
		t.Errorf("missing file: got %v, want 0", got)
	}
}
