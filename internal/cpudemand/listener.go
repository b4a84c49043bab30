package cpudemand

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"strconv"

	"github.com/sluicehq/sluice/internal/procnet"
)

// maxFDs bounds the file descriptors ListenerPid looks at: on a host with
// many processes it gives up rather than read them all.
const maxFDs = 1 << 16

// ErrNotFound is ListenerPid's error when no process of this user's that
// it may look at listens on the address.
var ErrNotFound = errors.New("cpudemand: no process found listening there")

// ListenerPid returns the process that listens on addr, a loopback TCP
// "host:port": the worker behind a static upstream on this host, found as
// ss -p finds it, from the socket's inode in /proc/net/tcp{,6} and the
// process whose file descriptors hold it. A listener on the wildcard
// address listens on loopback too. Only processes this process may read
// are found (the same user's, or any as root).
func ListenerPid(root, addr string) (int, error) {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 0, fmt.Errorf("cpudemand: %q: %w", addr, err)
	}
	if !ap.Addr().IsLoopback() {
		return 0, fmt.Errorf("cpudemand: %s is not a loopback address", addr)
	}
	want := map[string]bool{}
	for _, s := range procnet.Listening(root) {
		if a := s.Addr.Addr(); s.Addr.Port() == ap.Port() && (a.IsLoopback() || a.IsUnspecified()) {
			want[s.Inode] = true
		}
	}
	if len(want) == 0 {
		return 0, ErrNotFound
	}
	return socketOwner(root, want)
}

// socketOwner returns the process one of whose file descriptors is one of
// the sockets in want: the lowest such PID (a process that forked after
// listening shares the socket with its children).
func socketOwner(root string, want map[string]bool) (int, error) {
	dir, err := os.Open(root)
	if err != nil {
		return 0, err
	}
	names, err := dir.Readdirnames(-1)
	dir.Close()
	if err != nil {
		return 0, err
	}
	owner, seen := 0, 0
	for _, n := range names {
		pid, err := strconv.Atoi(n)
		if err != nil || owner != 0 && pid > owner {
			continue
		}
		seen += procnet.Sockets(root, pid, func(inode string) bool {
			if want[inode] {
				owner = pid
			}
			return owner != pid
		})
		if seen > maxFDs {
			return owner, errors.New("cpudemand: too many file descriptors to look for a listener")
		}
	}
	if owner == 0 {
		return 0, ErrNotFound
	}
	return owner, nil
}
