// Package procnet reads Linux's /proc for the TCP sockets processes listen
// on: the listening sockets of a network namespace (/proc/net/tcp and
// tcp6), and the sockets a process holds (its file descriptors). The
// supervisor uses it to say where a worker that never became ready listens
// instead of $PORT; package cpudemand to find the process behind a static
// upstream on this host. Nothing here is for a request's path: a look
// reads files of every process it is asked about.
package procnet

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Socket is a listening TCP socket.
type Socket struct {
	Addr  netip.AddrPort
	Inode string // as a process's file descriptor names it: socket:[Inode]
}

// Listening returns the listening TCP sockets, IPv4 and IPv6, of the
// network namespace whose proc directory is dir: "/proc" for this
// process's, "/proc/PID" for PID's. A table that cannot be read adds
// nothing.
func Listening(dir string) []Socket {
	var socks []Socket
	for _, table := range []string{"tcp", "tcp6"} {
		socks = append(socks, listening(filepath.Join(dir, "net", table))...)
	}
	return socks
}

func listening(table string) []Socket {
	f, err := os.Open(table)
	if err != nil {
		return nil
	}
	defer f.Close()
	var socks []Socket
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 || fl[3] != "0A" { // 0A: TCP_LISTEN
			continue
		}
		if a, ok := ParseAddr(fl[1]); ok {
			socks = append(socks, Socket{Addr: a, Inode: fl[9]})
		}
	}
	return socks
}

// ParseAddr decodes an address as /proc/net/tcp{,6} writes it,
// "0100007F:0BB8": the address in 32-bit words of the host's byte order,
// then the port, in hex. An IPv4-mapped IPv6 address comes back as IPv4.
func ParseAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(h)
	port, perr := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.NativeEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}

// Sockets calls yield with the inode of each socket process pid holds
// (root is the proc file system, "/proc"), until yield returns false. It
// returns how many file descriptors it looked at; none when the process is
// gone or not this user's to read.
func Sockets(root string, pid int, yield func(inode string) bool) int {
	dir := filepath.Join(root, strconv.Itoa(pid), "fd")
	d, err := os.Open(dir)
	if err != nil {
		return 0
	}
	fds, _ := d.Readdirnames(-1)
	d.Close()
	for i, fd := range fds {
		link, err := os.Readlink(filepath.Join(dir, fd))
		if err != nil {
			continue
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok && !yield(strings.TrimSuffix(inode, "]")) {
			return i + 1
		}
	}
	return len(fds)
}
