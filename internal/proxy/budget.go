package proxy

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
)

// budget is the per-process bound on the memory held by buffered bodies,
// requests and responses alike: bytes reserved before a buffer is allocated
// and released when it is dropped. Its zero value refuses everything; set
// max first. Safe for concurrent use; it never blocks.
type budget struct {
	max  int64
	used atomic.Int64
	peak atomic.Int64
}

// reserve takes n bytes if they fit, and reports whether they did.
func (b *budget) reserve(n int64) bool {
	for {
		u := b.used.Load()
		if u+n > b.max {
			return false
		}
		if b.used.CompareAndSwap(u, u+n) {
			b.notePeak(u + n)
			return true
		}
	}
}

// force takes n bytes whether they fit or not: the one buffer a response in
// flight needs to be relayed at all (bounded by the worker slots, not by
// clients).
func (b *budget) force(n int64) { b.notePeak(b.used.Add(n)) }

func (b *budget) release(n int64) { b.used.Add(-n) }

func (b *budget) notePeak(u int64) {
	for {
		p := b.peak.Load()
		if u <= p || b.peak.CompareAndSwap(p, u) {
			return
		}
	}
}

// Bounds of DefaultMaxBufferedBytes.
const (
	minDefaultBuffered = 64 << 20
	maxDefaultBuffered = 1 << 30
)

// DefaultMaxBufferedBytes returns the budget New gives buffered bodies when
// Options.MaxBufferedBytes is zero: an eighth of the memory this process
// may use (the cgroup's memory limit when there is one, else physical
// memory), within [64 MiB, 1 GiB]. An eighth leaves the rest to the Go
// heap's other users, the runtime's garbage-collection headroom (the heap
// may reach twice its live size before a collection with GOGC=100) and the
// workers, which usually share the machine or the container.
func DefaultMaxBufferedBytes() int64 {
	return defaultBuffered(machineMemory())
}

func defaultBuffered(mem int64) int64 {
	if mem <= 0 {
		return minDefaultBuffered * 4
	}
	return min(max(mem/8, minDefaultBuffered), maxDefaultBuffered)
}

// machineMemory returns the memory this process may use, 0 when unknown:
// the lowest of the cgroup v2 or v1 limit and MemTotal.
func machineMemory() int64 {
	mem := memTotal()
	for _, f := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || n <= 0 {
			continue // "max": no limit
		}
		if mem == 0 || n < mem { // cgroup v1 writes a huge number for "none"
			mem = n
		}
	}
	return mem
}

func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
