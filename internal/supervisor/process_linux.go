package supervisor

import (
	"syscall"
	"unsafe"
)

// sysProcAttr puts the worker in its own process group and asks the kernel
// to SIGKILL it when the thread that forked it exits: if sluice dies, even
// by SIGKILL, its workers die with it. Pdeathsig follows the forking OS
// thread, not the process (Go issue #27505), which is why every worker is
// started on the spawner's locked thread.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// waitExited blocks until the child pid has exited, without reaping it
// (WNOWAIT), so that its PID stays reserved while we clean up its group.
func waitExited(pid int) error {
	const pPID = 1 // P_PID
	var siginfo [16]uint64
	for {
		_, _, errno := syscall.Syscall6(syscall.SYS_WAITID, pPID, uintptr(pid),
			uintptr(unsafe.Pointer(&siginfo[0])), syscall.WEXITED|syscall.WNOWAIT, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return errno
		}
		return nil
	}
}

// guardChildAttr is the command's under a guard: in the guard's group,
// killed if the guard dies.
func guardChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
