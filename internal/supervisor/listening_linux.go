package supervisor

import (
	"bufio"
	"encoding/hex"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// listeningAddrs returns the TCP addresses the processes of the process
// group pgid listen on, read from /proc: the sockets each process of the
// group holds, looked up among the listening sockets of its network
// namespace. It is only called when a worker does not become ready, to
// say where it listens instead; it reads every process's stat, so it is
// not for a hot path.
func listeningAddrs(pgid int) []string {
	inodes := map[string]bool{}
	member := "" // a live process of the group: the leader may be gone
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || processGroup(pid) != pgid {
			continue
		}
		member = e.Name()
		dir := filepath.Join("/proc", e.Name(), "fd")
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			link, _ := os.Readlink(filepath.Join(dir, fd.Name()))
			if inode, ok := strings.CutPrefix(link, "socket:["); ok {
				inodes[strings.TrimSuffix(inode, "]")] = true
			}
		}
	}
	if len(inodes) == 0 {
		return nil
	}
	var addrs []string
	for _, table := range []string{"tcp", "tcp6"} {
		addrs = append(addrs, listeningIn(filepath.Join("/proc", member, "net", table), inodes)...)
	}
	slices.Sort(addrs)
	return slices.Compact(addrs)
}

// processGroup returns pid's process group, or -1.
func processGroup(pid int) int {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return -1
	}
	// pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses.
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return -1
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 {
		return -1
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return -1
	}
	return g
}

// listeningIn returns the addresses of the listening sockets of a
// /proc/net/tcp or tcp6 table whose inodes are among inodes.
func listeningIn(table string, inodes map[string]bool) []string {
	f, err := os.Open(table)
	if err != nil {
		return nil
	}
	defer f.Close()
	var addrs []string
	sc := bufio.NewScanner(f)
	sc.Scan() // the header
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fl := strings.Fields(sc.Text())
		if len(fl) < 10 || fl[3] != "0A" || !inodes[fl[9]] { // 0A: LISTEN
			continue
		}
		if a, ok := procAddr(fl[1]); ok {
			addrs = append(addrs, a.String())
		}
	}
	return addrs
}

// procAddr decodes /proc/net/tcp's "0100007F:0BB8": the address in
// 32-bit words of host byte order (little-endian here), the port in hex.
func procAddr(s string) (netip.AddrPort, bool) {
	h, p, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(h)
	port, perr := strconv.ParseUint(p, 16, 16)
	if !ok || err != nil || perr != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}
