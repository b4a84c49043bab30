package supervisor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// recorder is the shared, ordered log of what the fakes saw.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
}

// take returns the events recorded since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	ev := r.events
	r.events = nil
	return ev
}

// fakeEnv is an env whose processes, readiness and randomness the test
// controls. Run it under synctest: every wait is on a channel of the bubble.
type fakeEnv struct {
	rec *recorder

	mu          sync.Mutex
	procs       map[int]*fakeProc // by worker ID
	starts      []startRecord
	notReady    map[int]bool // worker IDs whose checks fail
	notReadyAll bool         // checks fail for every worker not listed as ready
	ready       map[int]bool
	ignoreTerm  bool // new processes ignore SIGTERM
	startErr    error
	execErr     error    // what executable answers
	listen      []string // what listening answers, for every process group
	rnd         float64
	port        int
}

type startRecord struct {
	id, slot int
	at       time.Time
	env      []string
	args     []string
	dir      string
}

func newFakeEnv(rec *recorder) *fakeEnv {
	return &fakeEnv{rec: rec, procs: map[int]*fakeProc{}, notReady: map[int]bool{}, ready: map[int]bool{}}
}

func (f *fakeEnv) env() env {
	return env{start: f.start, dial: f.dial, get: f.get, freePort: f.freePort, rand: f.rand,
		executable: f.executable, listening: f.listening}
}

func (f *fakeEnv) executable(Command) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.execErr
}

func (f *fakeEnv) listening(int) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.listen
}

func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, _ := strings.Cut(kv, "="); k == key {
			v = val
		}
	}
	return v
}

func (f *fakeEnv) start(spec procSpec) (process, error) {
	id, _ := strconv.Atoi(envValue(spec.Env, "SLUICE_WORKER_ID"))
	slot, _ := strconv.Atoi(envValue(spec.Env, "SLUICE_WORKER_SLOT"))
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.startErr != nil {
		f.rec.add("start-failed %d", id)
		return nil, f.startErr
	}
	p := &fakeProc{rec: f.rec, id: id, exit: make(chan error, 1), ignoreTerm: f.ignoreTerm}
	f.procs[id] = p
	f.starts = append(f.starts, startRecord{id: id, slot: slot, at: time.Now(), env: spec.Env, args: spec.Args, dir: spec.Dir})
	f.rec.add("start %d", id)
	return p, nil
}

func (f *fakeEnv) isReady(id int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.notReady[id] {
		return false
	}
	return !f.notReadyAll || f.ready[id]
}

func (f *fakeEnv) dial(ctx context.Context, e Endpoint) error {
	if !f.isReady(e.ID) {
		return errors.New("connection refused")
	}
	return nil
}

func (f *fakeEnv) get(ctx context.Context, e Endpoint, path string, h http.Header) (int, error) {
	if h.Get("Sluice-Warmup") != "" {
		f.rec.add("warm %d %s", e.ID, path)
		return 200, nil
	}
	if !f.isReady(e.ID) {
		return 503, nil
	}
	return 200, nil
}

func (f *fakeEnv) freePort() (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.port++
	return 20000 + f.port, nil
}

func (f *fakeEnv) rand() float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.rnd
}

func (f *fakeEnv) proc(id int) *fakeProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[id]
}

func (f *fakeEnv) startTimes() []startRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]startRecord(nil), f.starts...)
}

func (f *fakeEnv) setReady(id int, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready[id] = ok
	f.notReady[id] = !ok
}

// fakeProc is a process whose exit the test decides (crash), or that exits
// on SIGKILL, and on SIGTERM unless it ignores it.
type fakeProc struct {
	rec        *recorder
	id         int
	exit       chan error
	mu         sync.Mutex
	ignoreTerm bool
	dead       bool
	signals    []syscall.Signal
}

func (p *fakeProc) Pid() int { return 1000 + p.id }

func (p *fakeProc) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dead {
		return errors.New("process already finished")
	}
	p.signals = append(p.signals, sig)
	switch sig {
	case syscall.SIGTERM:
		p.rec.add("term %d", p.id)
		if !p.ignoreTerm {
			p.dieLocked(errors.New("signal: terminated"))
		}
	case syscall.SIGKILL:
		p.rec.add("kill %d", p.id)
		p.dieLocked(errors.New("signal: killed"))
	default:
		p.rec.add("signal %d %v", p.id, sig)
	}
	return nil
}

// crash makes the process exit on its own with err.
func (p *fakeProc) crash(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dieLocked(err)
}

func (p *fakeProc) dieLocked(err error) {
	if p.dead {
		return
	}
	p.dead = true
	p.rec.add("exit %d", p.id)
	p.exit <- err
}

func (p *fakeProc) Wait() error { return <-p.exit }

// fakeBalancer records its calls. Drain waits until release(id) is called
// when hold is set, else returns at once.
type fakeBalancer struct {
	rec  *recorder
	mu   sync.Mutex
	hold bool
	held map[int]chan struct{}
	eps  map[int]Endpoint
	// death is what Died reports for every worker; zero: nothing seen.
	death Death
	// onAdd, when set, runs inside Add, before it returns.
	onAdd func(Endpoint)
}

func newFakeBalancer(rec *recorder) *fakeBalancer {
	return &fakeBalancer{rec: rec, held: map[int]chan struct{}{}, eps: map[int]Endpoint{}}
}

func (b *fakeBalancer) Add(e Endpoint) {
	b.mu.Lock()
	b.eps[e.ID] = e
	onAdd := b.onAdd
	b.mu.Unlock()
	if onAdd != nil {
		onAdd(e)
	}
	b.rec.add("add %d", e.ID)
}

func (b *fakeBalancer) Drain(ctx context.Context, id int) error {
	b.rec.add("drain %d", id)
	b.mu.Lock()
	var ch chan struct{}
	if b.hold {
		ch = make(chan struct{})
		b.held[id] = ch
	}
	b.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		b.rec.add("drained %d", id)
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *fakeBalancer) release(id int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.held[id])
	delete(b.held, id)
}

func (b *fakeBalancer) Remove(id int) {
	b.mu.Lock()
	delete(b.eps, id)
	b.mu.Unlock()
	b.rec.add("remove %d", id)
}

func (b *fakeBalancer) Died(id int) Death {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.death
}

func (b *fakeBalancer) setDeath(d Death) {
	b.mu.Lock()
	b.death = d
	b.mu.Unlock()
}

func (b *fakeBalancer) endpoint(id int) (Endpoint, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.eps[id]
	return e, ok
}

var _ Witness = (*fakeBalancer)(nil)
var _ process = (*fakeProc)(nil)
