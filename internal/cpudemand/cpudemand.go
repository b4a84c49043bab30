// Package cpudemand measures, from outside a worker process, how much of
// the time its event loop wanted a CPU: the saturation a single-threaded
// worker would report itself (as node/sluice-worker does with Node's
// event-loop utilization), read from the kernel's scheduler statistics
// instead, so that a worker that reports nothing still gives sluice's
// per-worker limit a saturation signal rather than only its latency.
//
// The demand of a thread over an interval is the time it ran plus the time
// it waited, runnable, for a CPU after being preempted, divided by the
// interval: what Node.js's event-loop utilization counts, read from
// /proc/<pid>/task/<tid>/schedstat (time run, time waiting to run; Linux
// 2.6.9 and later) at every reading and status (context switches) once a
// scan. A thread that ran all
// the time has demand 1; so has one that shares its CPU with a neighbour
// and ran half the time, preempted the other half: both could take no more
// work. Time spent waiting for I/O or a timer is not demand, and neither
// is the wait to be scheduled after waking from it, as an event loop
// counts that time idle: the schedstat wait is counted in the share of the
// interval's switches that were preemptions (involuntary).
//
// The thread measured is the main thread of the busiest process in the
// worker's tree (the worker itself, or a child a wrapper such as npm or sh
// started), chosen again every RescanEvery. The reading is only given when
// that thread ran at least MinMainShare of its process's CPU time over
// about the last JudgeSpan of that time (not of wall time: a burst of
// collector threads as load comes back after an idle spell does not
// outvote the second of work before it), and no other process of the tree
// ran more than MaxOtherShare of what that one did over the last scan: a
// multi-threaded worker (a Go or Java server), or one that forks a cluster
// of its own, is not saturated when one of its threads is, and its limit
// is left to the other evidence.
package cpudemand

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"
)

const (
	// RescanEvery is how often the measured process and its share of the
	// tree's CPU are chosen again.
	RescanEvery = time.Second
	// MinMainShare is the least share of its process's CPU time the main
	// thread must have used over a scan for its demand to stand for the
	// process's saturation.
	MinMainShare = 0.6
	// MaxOtherShare is the most CPU time another process of the tree may
	// use over a scan, as a share of the measured process's.
	MaxOtherShare = 0.3
	// JudgeSpan is the CPU time of the measured process over which its
	// main thread's share is judged: about its last second of work,
	// however long ago, each scan's weighing exp(-its CPU time / JudgeSpan)
	// on what came before. Judged over the last scan's wall time, a
	// worker's first scan under load after an idle spell held only the
	// load's first burst, in which V8's compiler and collector threads did
	// nearly as much as its main thread (a Hypernova worker: 64 of 118 ms,
	// 0.54), and it went unmeasured for a second while its limit climbed
	// by throughput alone and the front's queue stood at half a second.
	JudgeSpan = time.Second
	// maxTree bounds the processes of one worker's tree looked at, and
	// maxThreads the threads of one process: both are the worker's to
	// choose, so they are bounded.
	maxTree    = 16
	maxThreads = 256
	// resolveEvery is how soon a Meter of a listener looks again for the
	// process behind it when it has none, doubling after each look that
	// finds none up to resolveMax: a look reads every process's file
	// descriptors, and a listener of another user's is never found.
	resolveEvery = 5 * time.Second
	resolveMax   = 5 * time.Minute
)

// Meter reads one worker's CPU demand. Not safe for concurrent use.
type Meter struct {
	root string // the proc file system, "/proc"
	pid  int    // the worker's process; 0: not known
	addr string // the worker's listening address, when pid is looked up
	// resolvedAt is when pid was last looked up from addr, and
	// resolveWait how long until the next look.
	resolvedAt  time.Time
	resolveWait time.Duration

	target   int // the process whose main thread is measured; 0: none yet
	single   bool
	scanAt   time.Time
	scanRun  map[int]uint64 // per process of the tree: all its threads' run time at scanAt
	scanMain uint64         // target's main thread's run time at scanAt
	// The target's main thread's and all its threads' CPU time over about
	// its last JudgeSpan of CPU time, ns: single is judgedMain >=
	// MinMainShare x judgedRun.
	judgedMain, judgedRun float64

	// The target's main thread's context switches at scanAt, voluntary
	// (it slept) and involuntary (preempted), and the share of the last
	// scan's that were preemptions: how much of its wait counts.
	scanVol, scanPreempted uint64
	preemptShare           float64

	at        time.Time // of the last reading
	run, wait uint64    // the target's main thread's counters then, ns

	// The last known reading's contention (see Contention), and whether
	// it is known.
	contention   float64
	contentionOK bool
}

// New returns a Meter of the process pid, reading the proc file system
// at root ("/proc" on Linux).
func New(root string, pid int) *Meter {
	return &Meter{root: root, pid: pid, scanRun: map[int]uint64{}}
}

// NewListener returns a Meter of the process that listens on addr, a
// loopback TCP "host:port" (see ListenerPid), looked up when first read
// and again, at most every few seconds, while none is found or the one
// found has gone: the worker behind a static upstream on this host, which
// its own supervisor (systemd, pm2, a container's init) may restart.
func NewListener(root, addr string) *Meter {
	return &Meter{root: root, addr: addr, scanRun: map[int]uint64{}}
}

// Read returns the demand of the worker's main thread since the last
// Read, in [0, 1], and whether it is known: not on the first call after a
// scan changed the thread measured, not when the worker is multi-threaded
// or gone, and not when no time has passed.
func (m *Meter) Read(now time.Time) (float64, bool) {
	if m.target == 0 || now.Sub(m.scanAt) >= RescanEvery {
		m.rescan(now)
	}
	if m.target == 0 {
		return 0, false
	}
	run, wait, err := m.schedstat(m.target, m.target)
	if err != nil {
		m.target = 0 // gone: look again on the next Read
		return 0, false
	}
	prevAt, prevRun, prevWait := m.at, m.run, m.wait
	m.at, m.run, m.wait = now, run, wait
	d := now.Sub(prevAt)
	if prevAt.IsZero() || d <= 0 || !m.single || run < prevRun || wait < prevWait {
		return 0, false
	}
	if ran, waited := run-prevRun, wait-prevWait; ran+waited > 0 {
		m.contention, m.contentionOK = float64(waited)/float64(ran+waited), true
	}
	demand := (float64(run-prevRun) + m.preemptShare*float64(wait-prevWait)) / float64(d)
	return min(max(demand, 0), 1), true
}

// Contention returns the share of the time the worker's main thread was
// runnable, over the interval of the last Read that returned a demand
// and in which it was, that it spent waiting for a CPU, every wait
// counted (after a wakeup as after a preemption): about 0 for a thread
// with a CPU to itself, a half for one of two busy threads sharing one
// CPU. It reports false until such a Read.
func (m *Meter) Contention() (float64, bool) { return m.contention, m.contentionOK }

// switches reads the context switches of pid's main thread: voluntary
// (it slept) and involuntary (it was preempted). They are read once a
// scan, not at every Read: the file is long, and its share changes slowly.
func (m *Meter) switches(pid int) (vol, preempted uint64, err error) {
	b, err := os.ReadFile(filepath.Join(m.root, strconv.Itoa(pid), "task", strconv.Itoa(pid), "status"))
	if err != nil {
		return 0, 0, err
	}
	var haveVol, havePreempted bool
	for line := range bytes.Lines(b) {
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			continue
		}
		var dst *uint64
		switch string(k) {
		case "voluntary_ctxt_switches":
			dst, haveVol = &vol, true
		case "nonvoluntary_ctxt_switches":
			dst, havePreempted = &preempted, true
		default:
			continue
		}
		if *dst, err = strconv.ParseUint(string(bytes.TrimSpace(v)), 10, 64); err != nil {
			return 0, 0, errFormat
		}
	}
	if !haveVol || !havePreempted {
		return 0, 0, errFormat
	}
	return vol, preempted, nil
}

// rescan chooses the busiest process of the worker's tree since the last
// scan and judges whether its main thread does most of its work.
func (m *Meter) rescan(now time.Time) {
	if m.addr != "" && (m.pid == 0 || !m.alive(m.pid)) &&
		(m.resolvedAt.IsZero() || now.Sub(m.resolvedAt) >= m.resolveWait) {
		m.pid, _ = ListenerPid(m.root, m.addr)
		m.resolvedAt = now
		switch {
		case m.pid != 0:
			m.resolveWait = resolveEvery
		case m.resolveWait == 0:
			m.resolveWait = resolveEvery
		default:
			m.resolveWait = min(2*m.resolveWait, resolveMax)
		}
	}
	tree := m.tree()
	runs := make(map[int]uint64, len(tree))
	best, bestRun, second := 0, uint64(0), uint64(0)
	for _, pid := range tree {
		total, ok := m.processRun(pid)
		if !ok {
			continue
		}
		runs[pid] = total
		used := total - min(total, m.scanRun[pid]) // a pid reused starts afresh
		switch {
		case best == 0 || used > bestRun:
			best, bestRun, second = pid, used, bestRun
		case used > second:
			second = used
		}
	}
	var main, vol, preempted uint64
	var err error
	if best != 0 {
		main, _, err = m.schedstat(best, best)
		if err == nil {
			vol, preempted, err = m.switches(best)
		}
	}
	switch {
	case best == 0 || err != nil || float64(second) > MaxOtherShare*float64(bestRun):
		m.single = false
	case best != m.target:
		// A new process measured: its shares are judged over its life so
		// far, weighed as its last JudgeSpan of work at most.
		life := share(main, runs[best])
		m.judgedRun = min(float64(runs[best]), float64(JudgeSpan))
		m.judgedMain = life * m.judgedRun
		m.single = life >= MinMainShare
		m.preemptShare = switchShare(preempted, vol)
		m.at = time.Time{}
	default:
		keep := math.Exp(-float64(bestRun) / float64(JudgeSpan))
		m.judgedMain = keep*m.judgedMain + float64(main-min(main, m.scanMain))
		m.judgedRun = keep*m.judgedRun + float64(bestRun)
		if m.judgedRun > 0 {
			m.single = m.judgedMain >= MinMainShare*m.judgedRun
		}
		if vol >= m.scanVol && preempted >= m.scanPreempted && vol+preempted > m.scanVol+m.scanPreempted {
			m.preemptShare = switchShare(preempted-m.scanPreempted, vol-m.scanVol)
		}
	}
	m.target, m.scanAt, m.scanRun, m.scanMain = best, now, runs, main
	m.scanVol, m.scanPreempted = vol, preempted
}

// switchShare is the share of a thread's wait for a CPU that followed a
// preemption, from its switches: a thread that never switched ran
// throughout (or slept throughout, and then waited for nothing).
func switchShare(preempted, vol uint64) float64 {
	if preempted+vol == 0 {
		return 1
	}
	return float64(preempted) / float64(preempted+vol)
}

func share(part, whole uint64) float64 {
	if whole == 0 {
		return 0
	}
	return float64(part) / float64(whole)
}

// tree is the worker's process and its descendants, breadth first, at
// most maxTree of them.
func (m *Meter) tree() []int {
	if m.pid == 0 || !m.alive(m.pid) {
		return nil
	}
	pids := []int{m.pid}
	for i := 0; i < len(pids) && len(pids) < maxTree; i++ {
		for _, tid := range m.threads(pids[i]) {
			b, err := os.ReadFile(filepath.Join(m.root, strconv.Itoa(pids[i]), "task", strconv.Itoa(tid), "children"))
			if err != nil {
				continue
			}
			for f := range bytes.FieldsSeq(b) {
				if c, err := strconv.Atoi(string(f)); err == nil && len(pids) < maxTree {
					pids = append(pids, c)
				}
			}
		}
	}
	return pids
}

func (m *Meter) alive(pid int) bool {
	_, err := os.Stat(filepath.Join(m.root, strconv.Itoa(pid)))
	return err == nil
}

// threads lists pid's threads, at most maxThreads.
func (m *Meter) threads(pid int) []int {
	f, err := os.Open(filepath.Join(m.root, strconv.Itoa(pid), "task"))
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(maxThreads)
	tids := make([]int, 0, len(names))
	for _, n := range names {
		if tid, err := strconv.Atoi(n); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids
}

// processRun is the run time of all of pid's threads, ns.
func (m *Meter) processRun(pid int) (uint64, bool) {
	var total uint64
	found := false
	for _, tid := range m.threads(pid) {
		if run, _, err := m.schedstat(pid, tid); err == nil {
			total += run
			found = true
		}
	}
	return total, found
}

var errFormat = errors.New("cpudemand: malformed schedstat")

// schedstat reads a thread's time on a CPU and time runnable waiting for
// one, ns.
func (m *Meter) schedstat(pid, tid int) (run, wait uint64, err error) {
	b, err := os.ReadFile(filepath.Join(m.root, strconv.Itoa(pid), "task", strconv.Itoa(tid), "schedstat"))
	if err != nil {
		return 0, 0, err
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0, 0, errFormat
	}
	if run, err = strconv.ParseUint(string(f[0]), 10, 64); err != nil {
		return 0, 0, errFormat
	}
	if wait, err = strconv.ParseUint(string(f[1]), 10, 64); err != nil {
		return 0, 0, errFormat
	}
	return run, wait, nil
}
