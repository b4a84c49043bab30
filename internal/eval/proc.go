package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a child process that leads its own process group, so that a
// stop reaches its children too (nginx's workers) and nothing else. The
// kernel kills it if the harness dies (Pdeathsig), so an interrupted run
// leaves nothing behind. Safe for concurrent use.
type Process struct {
	Name string
	cmd  *exec.Cmd
	pid  int
	log  *os.File

	done chan struct{} // closed when the process has exited and been reaped
	err  error         // Wait's result; read after done

	stopOnce sync.Once
}

// StartProcess starts argv with env added to the harness's environment,
// its output appended to logPath. The process is reaped by a goroutine
// that lives until it exits; call Stop to end it.
func StartProcess(name, logPath string, env []string, argv ...string) (*Process, error) {
	if len(argv) == 0 {
		return nil, errors.New("eval: StartProcess: empty command")
	}
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("eval: %s: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("eval: starting %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, pid: cmd.Process.Pid, log: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID returns the process's ID, which is also its process group's.
func (p *Process) PID() int { return p.pid }

// Exited returns a channel closed once the process has exited.
func (p *Process) Exited() <-chan struct{} { return p.done }

// Stop sends SIGTERM to the process group, waits up to grace for the
// leader to exit, then sends SIGKILL to the group. It returns once the
// leader has been reaped (or after one more second if even SIGKILL does
// not end it). Safe to call more than once.
func (p *Process) Stop(grace time.Duration) {
	p.stopOnce.Do(func() {
		select {
		case <-p.done:
			return
		default:
		}
		syscall.Kill(-p.pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		defer t.Stop()
		select {
		case <-p.done:
			// The group may still hold children (nginx workers exit after
			// their master): make sure they go too.
			syscall.Kill(-p.pid, syscall.SIGKILL)
			return
		case <-t.C:
		}
		syscall.Kill(-p.pid, syscall.SIGKILL)
		select {
		case <-p.done:
		case <-time.After(time.Second):
		}
	})
}

// CPUTime returns the CPU time (user + system) used so far by every live
// process of p's process group, read from /proc. Children that exited and
// were reaped by their parent count through the parent's cumulative fields.
func (p *Process) CPUTime() time.Duration {
	return groupCPUTime("/proc", p.pid)
}

// clockTick is the kernel's USER_HZ, the unit of /proc/PID/stat times. It
// is 100 on every Linux ABI Go supports.
const clockTick = 100

// groupCPUTime sums utime, stime, cutime and cstime of the processes in
// process group pgid, as /proc/PID/stat reports them under root.
func groupCPUTime(root string, pgid int) time.Duration {
	stats, _ := filepath.Glob(filepath.Join(root, "[0-9]*", "stat"))
	var ticks int64
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process exited meanwhile
		}
		st, ok := parseStat(b)
		if ok && st.pgrp == pgid {
			ticks += st.utime + st.stime + st.cutime + st.cstime
		}
	}
	return time.Duration(ticks) * time.Second / clockTick
}

// supervisedCPU splits the CPU time of a process that supervises workers
// (sluice serve), each worker leading a process group of its own (the
// worker, or sluice's guard with the worker in its group), as /proc under
// root reports it: own is the supervisor's utime and stime; workers is
// every live process's in the groups its children lead, plus the
// supervisor's cutime and cstime, where the workers it replaced and
// reaped went.
func supervisedCPU(root string, pid int) (own, workers time.Duration) {
	paths, _ := filepath.Glob(filepath.Join(root, "[0-9]*", "stat"))
	var stats []procStat
	leaders := map[int]bool{}
	for _, path := range paths {
		b, err := os.ReadFile(path)
		if err != nil {
			continue // the process exited meanwhile
		}
		st, ok := parseStat(b)
		if !ok {
			continue
		}
		stats = append(stats, st)
		if st.pid == pid {
			own = time.Duration(st.utime+st.stime) * time.Second / clockTick
			workers += time.Duration(st.cutime+st.cstime) * time.Second / clockTick
		}
		if st.ppid == pid {
			leaders[st.pid] = true
		}
	}
	for _, st := range stats {
		if leaders[st.pgrp] {
			workers += time.Duration(st.utime+st.stime+st.cutime+st.cstime) * time.Second / clockTick
		}
	}
	return own, workers
}

type procStat struct {
	pid, ppid, pgrp              int
	utime, stime, cutime, cstime int64
}

// parseStat reads the fields of /proc/PID/stat we need. The command name
// (field 2) is in parentheses and may itself hold spaces and parentheses,
// so fields are counted from the last ')'.
func parseStat(b []byte) (procStat, bool) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, false
	}
	pid, _, _ := strings.Cut(string(b[:i]), " (")
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); pgrp is field 5, utime..cstime 14..17.
	if len(f) < 15 {
		return procStat{}, false
	}
	var st procStat
	var err error
	num := func(k int) int64 {
		if err != nil {
			return 0
		}
		var v int64
		v, err = strconv.ParseInt(f[k-3], 10, 64)
		return v
	}
	st.pid, err = strconv.Atoi(strings.TrimSpace(pid))
	st.ppid, st.pgrp = int(num(4)), int(num(5))
	st.utime, st.stime, st.cutime, st.cstime = num(14), num(15), num(16), num(17)
	return st, err == nil
}

// SelfCPUTime returns the harness's own CPU time (the load generator's).
func SelfCPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// MachineCPUTime returns the CPU time every core of the machine has spent
// running processes (user, nice, system, and steal: time the hypervisor
// gave to someone else) since boot, from /proc/stat, or 0 if unknown. Compared with what the suite's own processes used over a
// run, it shows how much the machine's other tenants took.
func MachineCPUTime() time.Duration { return machineCPUTime("/proc/stat") }

func machineCPUTime(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0
	}
	var busy int64
	for i, v := range f[1:] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0
		}
		// user nice system idle iowait irq softirq steal guest guest_nice.
		// Guest time is already counted in user. Interrupt time is left
		// out: the suite's own loopback traffic is processed there and
		// no process is charged for it.
		switch i {
		case 3, 4, 5, 6, 8, 9:
			continue
		}
		busy += n
	}
	return time.Duration(busy) * time.Second / clockTick
}

// WaitHTTP polls url every 50 ms until it answers 2xx or ctx is done. A
// server that is starting has no other way to say it is ready.
func WaitHTTP(ctx context.Context, url string) error {
	c := newClient(time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		status, err := get(ctx, c, url, io.Discard)
		if err == nil && status/100 == 2 {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("status %d", status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("eval: waiting for %s: %w (last error: %v)", url, ctx.Err(), err)
		case <-tick.C:
		}
	}
}
