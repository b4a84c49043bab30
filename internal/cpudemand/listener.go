package cpudemand

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	var inodes []string
	for _, table := range []string{"tcp", "tcp6"} {
		in, err := listeningInodes(filepath.Join(root, "net", table), ap.Port())
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return 0, err
		}
		inodes = append(inodes, in...)
	}
	if len(inodes) == 0 {
		return 0, ErrNotFound
	}
	want := make(map[string]bool, len(inodes))
	for _, in := range inodes {
		want["socket:["+in+"]"] = true
	}
	return socketOwner(root, want)
}

// listeningInodes returns the inodes of the sockets in a /proc/net/tcp
// table that listen on port at a loopback or the wildcard address.
func listeningInodes(table string, port uint16) ([]string, error) {
	f, err := os.Open(table)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var inodes []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local rem st tx:rx tr:when retrnsmt uid timeout inode
		if len(fields) < 10 || fields[3] != "0A" { // TCP_LISTEN
			continue
		}
		host, p, ok := strings.Cut(fields[1], ":")
		if !ok {
			continue
		}
		if n, err := strconv.ParseUint(p, 16, 16); err != nil || uint16(n) != port {
			continue
		}
		if a, ok := procAddr(host); ok && (a.IsLoopback() || a.IsUnspecified()) {
			inodes = append(inodes, fields[9])
		}
	}
	return inodes, sc.Err()
}

// procAddr reads an address as /proc/net/tcp{,6} prints it: the bytes of
// each 32-bit word in the host's order, in hex.
func procAddr(h string) (netip.Addr, bool) {
	b, err := hexBytes(h)
	if err != nil || len(b) != 4 && len(b) != 16 {
		return netip.Addr{}, false
	}
	for i := 0; i < len(b); i += 4 {
		binary.BigEndian.PutUint32(b[i:], binary.NativeEndian.Uint32(b[i:]))
	}
	a, _ := netip.AddrFromSlice(b)
	return a.Unmap(), true
}

func hexBytes(h string) ([]byte, error) {
	if len(h)%2 != 0 {
		return nil, errors.New("odd length")
	}
	b := make([]byte, len(h)/2)
	for i := range b {
		v, err := strconv.ParseUint(h[2*i:2*i+2], 16, 8)
		if err != nil {
			return nil, err
		}
		b[i] = byte(v)
	}
	return b, nil
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
		fdDir := filepath.Join(root, n, "fd")
		d, err := os.Open(fdDir)
		if err != nil {
			continue // another user's, or gone
		}
		fds, _ := d.Readdirnames(-1)
		d.Close()
		for _, fd := range fds {
			if seen++; seen > maxFDs {
				return owner, errors.New("cpudemand: too many file descriptors to look for a listener")
			}
			if l, err := os.Readlink(filepath.Join(fdDir, fd)); err == nil && want[l] {
				owner = pid
				break
			}
		}
	}
	if owner == 0 {
		return 0, ErrNotFound
	}
	return owner, nil
}
