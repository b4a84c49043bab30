//go:build unix

package supervisor

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// outputGrace is how long a worker's output pipes may stay open after it
// exits: long enough to drain what it wrote, short enough that a descendant
// which escaped the process group cannot hold the supervisor.
const outputGrace = 2 * time.Second

// osProcess is a real worker process, leader of its own process group.
type osProcess struct {
	cmd     *exec.Cmd
	pid     int
	outs    []*os.File // read ends of stdout and stderr
	copying sync.WaitGroup

	mu     sync.Mutex
	exited bool // no signal may be sent: the PID may be reused
}

// startProcess starts spec in its own process group (so that signals to
// sluice's group, such as a terminal's Ctrl-C, do not reach workers
// behind the supervisor's back, and so that a stop reaches the worker's
// children too) and, on Linux, with SIGKILL as its parent-death signal.
func startProcess(spec procSpec) (process, error) {
	cmd := exec.Command(spec.Path)
	cmd.Args = spec.Args
	cmd.Env = spec.Env
	cmd.SysProcAttr = sysProcAttr()
	if spec.Guard != "" {
		cmd = exec.Command(spec.Guard, spec.Args...)
		cmd.Env = append(spec.Env, guardEnv+"=3")
		cmd.ExtraFiles = []*os.File{spec.Lifeline} // fd 3
		// No parent-death signal for the guard: it must outlive sluice
		// for as long as it takes to kill its group.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	}
	cmd.Dir = spec.Dir

	// Our own pipes rather than cmd.StdoutPipe: exec closes those in Wait,
	// losing the last lines, and waits for copiers a grandchild may block.
	var parentEnds, childEnds []*os.File
	closeAll := func(fs []*os.File) {
		for _, f := range fs {
			f.Close()
		}
	}
	for range 2 {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll(parentEnds)
			closeAll(childEnds)
			return nil, err
		}
		parentEnds = append(parentEnds, r)
		childEnds = append(childEnds, w)
	}
	cmd.Stdout, cmd.Stderr = childEnds[0], childEnds[1]
	err := cmd.Start()
	closeAll(childEnds)
	if err != nil {
		closeAll(parentEnds)
		return nil, err
	}
	p := &osProcess{cmd: cmd, pid: cmd.Process.Pid, outs: parentEnds}
	for i, w := range []io.Writer{spec.Stdout, spec.Stderr} {
		p.copying.Go(func() { copyLines(w, parentEnds[i]) })
	}
	return p, nil
}

func (p *osProcess) Pid() int { return p.pid }

func (p *osProcess) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exited {
		return os.ErrProcessDone
	}
	return syscall.Kill(-p.pid, sig)
}

func (p *osProcess) Wait() error {
	if waitExited(p.pid) == nil {
		// The leader is a zombie: its PID, and so its process group ID,
		// cannot be reused until we reap it. Take down anything it left
		// behind in its group, then allow no more signals.
		p.mu.Lock()
		syscall.Kill(-p.pid, syscall.SIGKILL)
		p.exited = true
		p.mu.Unlock()
	}
	err := p.cmd.Wait()
	p.mu.Lock()
	p.exited = true
	p.mu.Unlock()

	deadline := time.Now().Add(outputGrace)
	for _, f := range p.outs {
		f.SetReadDeadline(deadline)
	}
	p.copying.Wait()
	for _, f := range p.outs {
		f.Close()
	}
	return err
}

// copyLines copies r to w one line at a time; a line longer than the buffer
// is cut into pieces, each written as a line of its own.
func copyLines(w io.Writer, r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line[:len(line):len(line)], '\n')
			}
			w.Write(line)
		}
		if err != nil && err != bufio.ErrBufferFull {
			return
		}
	}
}
