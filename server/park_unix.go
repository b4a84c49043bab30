//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package server

import "syscall"

const canPark = true

// peek looks at socket fd without reading from it or blocking: readable
// when a byte waits, done when the wait is over (a byte, the end of the
// stream, or an error: net/http or the parker sees which).
func peek(fd uintptr) (readable, done bool) {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	switch {
	case n > 0:
		return true, true
	case err == syscall.EAGAIN || err == syscall.EWOULDBLOCK:
		return false, false
	case err == syscall.EINTR:
		return true, true // net/http's read will retry
	}
	return false, true
}
