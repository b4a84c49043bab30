package cpudemand

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// fakeProc is a proc file system in a directory: threads with schedstat
// counters and children lists.
type fakeProc struct {
	t        *testing.T
	root     string
	switches map[int][2]uint64 // per thread: voluntary, involuntary
}

func newFakeProc(t *testing.T) *fakeProc {
	return &fakeProc{t: t, root: t.TempDir(), switches: map[int][2]uint64{}}
}

// switched sets the context switches of tid (of process pid) and writes
// them.
func (f *fakeProc) switched(pid, tid int, vol, preempted uint64) {
	f.switches[tid] = [2]uint64{vol, preempted}
	f.writeStatus(pid, tid)
}

func (f *fakeProc) writeStatus(pid, tid int) {
	f.t.Helper()
	sw := f.switches[tid]
	status := fmt.Sprintf("Name:\tnode\nState:\tS (sleeping)\nvoluntary_ctxt_switches:\t%d\nnonvoluntary_ctxt_switches:\t%d\n", sw[0], sw[1])
	if err := os.WriteFile(filepath.Join(f.root, fmt.Sprint(pid), "task", fmt.Sprint(tid), "status"), []byte(status), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// thread sets tid's (of process pid) run and wait counters, ns, and its
// children.
func (f *fakeProc) thread(pid, tid int, run, wait time.Duration, children ...int) {
	f.t.Helper()
	dir := filepath.Join(f.root, fmt.Sprint(pid), "task", fmt.Sprint(tid))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	write := func(name, s string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(s), 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	write("schedstat", fmt.Sprintf("%d %d 7\n", run.Nanoseconds(), wait.Nanoseconds()))
	var cs []string
	for _, c := range children {
		cs = append(cs, fmt.Sprint(c))
	}
	write("children", strings.Join(cs, " "))
	f.writeStatus(pid, tid)
}

func (f *fakeProc) exit(pid int) {
	if err := os.RemoveAll(filepath.Join(f.root, fmt.Sprint(pid))); err != nil {
		f.t.Fatal(err)
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

var t0 = time.Date(2026, 12, 3, 0, 0, 0, 0, time.UTC)

func TestDemandIsRunPlusWaitOverTime(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, time.Second, 0)
	p.thread(10, 11, 100*time.Millisecond, 0) // a helper thread
	m := New(p.root, 10)
	if _, ok := m.Read(t0); ok {
		t.Fatal("the first reading has nothing to compare with, but was given")
	}
	// 100 ms later: ran 30 ms, waited 20 ms for a CPU.
	p.thread(10, 10, time.Second+30*time.Millisecond, 20*time.Millisecond)
	d, ok := m.Read(t0.Add(100 * time.Millisecond))
	if !ok || !near(d, 0.5) {
		t.Fatalf("Read = %v, %v; want 0.5, true", d, ok)
	}
	// A thread that ran half the time and waited the other half, as two
	// workers sharing one CPU both saturated, wants a whole CPU.
	p.thread(10, 10, time.Second+80*time.Millisecond, 70*time.Millisecond)
	if d, ok := m.Read(t0.Add(200 * time.Millisecond)); !ok || !near(d, 1) {
		t.Fatalf("Read = %v, %v; want 1, true", d, ok)
	}
	// Idle: nothing ran.
	if d, ok := m.Read(t0.Add(300 * time.Millisecond)); !ok || d != 0 {
		t.Fatalf("Read = %v, %v; want 0, true", d, ok)
	}
	// No time passed: unknown, not infinite.
	if _, ok := m.Read(t0.Add(300 * time.Millisecond)); ok {
		t.Fatal("a reading with no time passed was given")
	}
}

// The wait to be scheduled after waking (from epoll, a timer) is not
// demand: an event loop counts it idle, and on a busy machine it would
// make an async worker that does little look saturated. The wait after a
// preemption is: the loop was in the middle of its work. Which is which
// is judged from the switches of the last scan.
func TestWaitAfterWakeupIsNotDemand(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, time.Second, 0)
	p.switched(10, 10, 1000, 0) // so far it only ever slept
	m := New(p.root, 10)
	m.Read(t0)
	// 10 ms run, 40 ms waiting to run after wakeups.
	p.thread(10, 10, time.Second+10*time.Millisecond, 40*time.Millisecond)
	if d, ok := m.Read(t0.Add(100 * time.Millisecond)); !ok || !near(d, 0.1) {
		t.Fatalf("after wakeups only: Read = %v, %v; want 0.1, true", d, ok)
	}
	// Over the next scan, half its switches were preemptions: half the
	// wait counts from then on.
	p.switched(10, 10, 1010, 10)
	at := t0.Add(RescanEvery)
	m.Read(at)
	p.thread(10, 10, time.Second+20*time.Millisecond, 80*time.Millisecond)
	if d, ok := m.Read(at.Add(100 * time.Millisecond)); !ok || !near(d, 0.3) {
		t.Fatalf("half preempted: Read = %v, %v; want 0.3, true", d, ok)
	}
	// Preempted only, as a renderer sharing its CPU: all of it.
	p.switched(10, 10, 1010, 30)
	at = at.Add(RescanEvery)
	m.Read(at)
	p.thread(10, 10, time.Second+70*time.Millisecond, 130*time.Millisecond)
	if d, ok := m.Read(at.Add(100 * time.Millisecond)); !ok || !near(d, 1) {
		t.Fatalf("preempted only: Read = %v, %v; want 1, true", d, ok)
	}
}

func TestDemandClampedToOne(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, time.Second, 0)
	m := New(p.root, 10)
	m.Read(t0)
	// Counters read a little after the clock: more than the interval.
	p.thread(10, 10, time.Second+60*time.Millisecond, 50*time.Millisecond)
	if d, ok := m.Read(t0.Add(100 * time.Millisecond)); !ok || d != 1 {
		t.Fatalf("Read = %v, %v; want 1, true", d, ok)
	}
}

// A wrapper (npm, sh) that starts the real worker as its child: the
// child's main thread is measured.
func TestBusiestProcessOfTheTreeMeasured(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, 50*time.Millisecond, 0, 20) // npm: idle, child 20
	p.thread(20, 20, 2*time.Second, 0)           // node
	p.thread(20, 21, 200*time.Millisecond, 0)
	m := New(p.root, 10)
	m.Read(t0)
	p.thread(20, 20, 2*time.Second+40*time.Millisecond, 0)
	p.thread(10, 10, 50*time.Millisecond+time.Millisecond, 0)
	if d, ok := m.Read(t0.Add(100 * time.Millisecond)); !ok || !near(d, 0.4) {
		t.Fatalf("Read = %v, %v; want the child's 0.4, true", d, ok)
	}
}

// A worker whose main thread does little of its work (a Go or Java server)
// is not judged by it.
func TestMultiThreadedWorkerNotMeasured(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, 100*time.Millisecond, 0)
	for tid := 11; tid < 15; tid++ {
		p.thread(10, tid, time.Second, 0)
	}
	m := New(p.root, 10)
	m.Read(t0)
	p.thread(10, 10, 150*time.Millisecond, 0)
	if d, ok := m.Read(t0.Add(100 * time.Millisecond)); ok {
		t.Fatalf("Read = %v, true for a main thread with 2%% of the CPU time; want unknown", d)
	}
}

// The share is judged again at every scan: a worker whose main thread
// becomes the minor part of its work stops being measured, and one whose
// main thread becomes the major part starts.
func TestMainShareJudgedPerScan(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, time.Second, 0)
	p.thread(10, 11, 0, 0)
	m := New(p.root, 10)
	m.Read(t0)
	p.thread(10, 10, time.Second+50*time.Millisecond, 0)
	if _, ok := m.Read(t0.Add(100 * time.Millisecond)); !ok {
		t.Fatal("a single-threaded worker was not measured")
	}
	// Over the next scan the helper thread does most of the work.
	p.thread(10, 11, 3*time.Second, 0)
	p.thread(10, 10, time.Second+100*time.Millisecond, 0)
	if _, ok := m.Read(t0.Add(RescanEvery + 100*time.Millisecond)); ok {
		t.Fatal("measured after the main thread became the minor part of the work")
	}
	p.thread(10, 10, 4*time.Second, 0)
	m.Read(t0.Add(2*RescanEvery + 100*time.Millisecond))
	p.thread(10, 10, 4*time.Second+50*time.Millisecond, 0)
	if _, ok := m.Read(t0.Add(2*RescanEvery + 200*time.Millisecond)); !ok {
		t.Fatal("not measured after the main thread became the major part again")
	}
}

func TestGoneWorkerNotMeasured(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, time.Second, 0)
	m := New(p.root, 10)
	m.Read(t0)
	p.exit(10)
	if _, ok := m.Read(t0.Add(100 * time.Millisecond)); ok {
		t.Fatal("a reading was given for a process that exited")
	}
	if _, ok := m.Read(t0.Add(200 * time.Millisecond)); ok {
		t.Fatal("a reading was given for a process that exited")
	}
}

func TestMalformedSchedstatNotMeasured(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, time.Second, 0)
	m := New(p.root, 10)
	m.Read(t0)
	for i, bad := range []struct{ file, text string }{
		{"schedstat", ""}, {"schedstat", "12"}, {"schedstat", "x 1 1"}, {"schedstat", "1 y 1"},
		{"status", "Name:\tnode\n"},
		{"status", "voluntary_ctxt_switches:\t1\nnonvoluntary_ctxt_switches:\tz\n"},
	} {
		// Each case at a scan of its own: the status file is read then.
		at := t0.Add(time.Duration(i+1) * RescanEvery)
		p.thread(10, 10, time.Second, 0)
		m.Read(at)
		if err := os.WriteFile(filepath.Join(p.root, "10", "task", "10", bad.file), []byte(bad.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, ok := m.Read(at.Add(RescanEvery)); ok {
			t.Fatalf("a reading was given from %s %q", bad.file, bad.text)
		}
	}
}

// The tree looked at is bounded: a worker that forks without end costs a
// bounded scan.
func TestTreeBounded(t *testing.T) {
	p := newFakeProc(t)
	var kids []int
	for c := 100; c < 100+3*maxTree; c++ {
		kids = append(kids, c)
		p.thread(c, c, 0, 0)
	}
	p.thread(10, 10, time.Second, 0, kids...)
	m := New(p.root, 10)
	if n := len(m.tree()); n != maxTree {
		t.Fatalf("tree has %d processes; want the bound %d", n, maxTree)
	}
}

// A worker that forks a cluster of its own (several busy processes) is
// not judged by one of them.
func TestClusterOfProcessesNotMeasured(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, 10*time.Millisecond, 0, 20, 30)
	p.thread(20, 20, time.Second, 0)
	p.thread(30, 30, 800*time.Millisecond, 0)
	m := New(p.root, 10)
	m.Read(t0)
	p.thread(20, 20, time.Second+50*time.Millisecond, 0)
	if d, ok := m.Read(t0.Add(100 * time.Millisecond)); ok {
		t.Fatalf("Read = %v, true for one of two busy processes; want unknown", d)
	}
}

// Contention is the share of the time the main thread was runnable that
// it waited for a CPU, every wait counted: a worker that wakes to find its
// CPU taken shares it, whether it slept or was preempted.
func TestContentionIsWaitOverRunnable(t *testing.T) {
	p := newFakeProc(t)
	p.thread(10, 10, time.Second, 0)
	p.switched(10, 10, 1000, 0) // it only ever slept: its waits are no demand
	m := New(p.root, 10)
	if _, ok := m.Contention(); ok {
		t.Fatal("contention known before any reading")
	}
	m.Read(t0)
	if _, ok := m.Contention(); ok {
		t.Fatal("contention known after a first reading, which has nothing to compare with")
	}
	// 100 ms: ran 45 ms, waited 45 ms, as one of two workers on one CPU.
	p.thread(10, 10, time.Second+45*time.Millisecond, 45*time.Millisecond)
	m.Read(t0.Add(100 * time.Millisecond))
	if c, ok := m.Contention(); !ok || !near(c, 0.5) {
		t.Fatalf("shared CPU: Contention = %v, %v; want 0.5, true", c, ok)
	}
	// Then 90 ms run and 10 ms waiting: a CPU nearly its own.
	p.thread(10, 10, time.Second+135*time.Millisecond, 55*time.Millisecond)
	m.Read(t0.Add(200 * time.Millisecond))
	if c, ok := m.Contention(); !ok || !near(c, 0.1) {
		t.Fatalf("own CPU: Contention = %v, %v; want 0.1, true", c, ok)
	}
	// Idle: nothing to judge by, the last known one stands.
	m.Read(t0.Add(300 * time.Millisecond))
	if c, ok := m.Contention(); !ok || !near(c, 0.1) {
		t.Fatalf("idle: Contention = %v, %v; want the last known 0.1, true", c, ok)
	}
}

// The main thread's share is judged over about the last JudgeSpan of the
// process's CPU time, not over the last scan: after an idle spell, the
// first scan under load may hold little more than a burst of its helper
// threads (a JIT's compiler, a collector), which does not outvote the
// work before it; a second of work in which the main thread does the
// minor part does.
func TestMainShareJudgedOverCPUTime(t *testing.T) {
	p := newFakeProc(t)
	main, helper := time.Second, 100*time.Millisecond
	p.thread(10, 10, main, 0)
	p.thread(10, 11, helper, 0)
	m := New(p.root, 10)
	m.Read(t0)
	at := t0
	scan := func(mainRan, helperRan time.Duration) bool {
		t.Helper()
		main += mainRan
		helper += helperRan
		p.thread(10, 10, main, 0)
		p.thread(10, 11, helper, 0)
		at = at.Add(RescanEvery)
		_, ok := m.Read(at)
		return ok
	}
	// Idle scans: a few milliseconds, all the helper's.
	for range 5 {
		scan(0, 3*time.Millisecond)
	}
	// Load comes back: its first scan's burst is the helper's half.
	if !scan(64*time.Millisecond, 54*time.Millisecond) {
		t.Fatal("not measured in the scan load came back in, after a second of the main thread's work")
	}
	if !scan(700*time.Millisecond, 100*time.Millisecond) {
		t.Fatal("not measured under load")
	}
	// The worker's work moves to a helper thread: a second of it, the main
	// thread's share 0.3, ends the measuring.
	if scan(300*time.Millisecond, 700*time.Millisecond) {
		t.Fatal("measured after a second of work in which the main thread did 30%")
	}
}
