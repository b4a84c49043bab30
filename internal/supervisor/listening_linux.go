package supervisor

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/sluicehq/sluice/internal/procnet"
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
		procnet.Sockets("/proc", pid, func(inode string) bool {
			inodes[inode] = true
			return true
		})
	}
	if len(inodes) == 0 {
		return nil
	}
	var addrs []string
	for _, s := range procnet.Listening(filepath.Join("/proc", member)) {
		if inodes[s.Inode] {
			addrs = append(addrs, s.Addr.String())
		}
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
