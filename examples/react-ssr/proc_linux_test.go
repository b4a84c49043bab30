package reactssr

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// procStat returns the state letter and parent pid of process pid from
// /proc, and false when there is no such process.
func procStat(pid int) (state byte, ppid int, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, false
	}
	fields := bytes.Fields(b[i+1:])
	if len(fields) < 2 {
		return 0, 0, false
	}
	ppid, err = strconv.Atoi(string(fields[1]))
	if err != nil {
		return 0, 0, false
	}
	return fields[0][0], ppid, true
}

// isWorker reports whether pid is a running (not zombie) node worker.js.
// Checking the command line guards against a recycled pid.
func isWorker(pid int) bool {
	state, _, ok := procStat(pid)
	if !ok || state == 'Z' || state == 'X' {
		return false
	}
	cmdline, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	args := bytes.Split(bytes.TrimRight(cmdline, "\x00"), []byte{0})
	return len(args) >= 2 && filepath.Base(string(args[0])) == "node" && string(args[1]) == "worker.js"
}

// workersOf returns the running node worker.js processes below ppid,
// sorted: its children, or their children (sluice runs each worker under a
// small guard process that kills the worker's process group when sluice
// dies).
func workersOf(ppid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parents := make(map[int]int)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if _, parent, ok := procStat(pid); ok {
			parents[pid] = parent
		}
	}
	var pids []int
	for pid, parent := range parents {
		if (parent == ppid || parents[parent] == ppid) && isWorker(pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}
