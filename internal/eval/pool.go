package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/demo"
)

// Pool is a set of processes that render the demo page and count their
// work at demo.StatsPath: the demo workers, or one library-face server. A
// Pool's counters are what wasted work is computed from. Scenario
// hypernova's pools count nothing: only their readiness, restarts and CPU
// time are used. Safe for concurrent use once started.
type Pool struct {
	Procs []*Process
	// Addrs are the processes' host:port, in the order of Procs.
	Addrs     []string
	specs     []procSpec // how each process was started, for Restart
	readyPath string
	// ready, if set, replaces the GET of readyPath: it waits until the
	// process at addr (host:port) serves.
	ready  func(ctx context.Context, addr string) error
	client *http.Client
	// cpu, if set, is what CPUTime returns: for renderers the pool did
	// not start (a sluice's supervised workers).
	cpu func() time.Duration
	// Warm, if set, is run after every Restart: a Node.js worker starts
	// cold (V8 compiles the renderer as it runs) and would otherwise
	// handicap whichever setup runs next.
	Warm func(ctx context.Context) error

	mu sync.Mutex // guards Procs' elements and gone while RestartOne replaces one
	// gone is the CPU time of the processes RestartOne replaced, as last
	// read before each was stopped.
	gone time.Duration
}

// procSpec is how a pool process is started.
type procSpec struct {
	name, logPath string
	env, argv     []string
}

// StartWorkers starts n demo workers (`sluice demo-worker`, single
// threaded) of the sluice binary bin on free ports of 127.0.0.1, each
// calibrated with unitsPerMs, and waits until every one answers its ready
// path. Their output goes to logDir/worker-N.log. They run on l's worker
// CPUs.
func StartWorkers(ctx context.Context, bin string, n int, unitsPerMs float64, logDir string, l Layout) (*Pool, error) {
	return startWorkers(ctx, n, demo.ReadyPath, logDir, l, func(i, port int) procSpec {
		name := fmt.Sprintf("worker-%d", i+1)
		env := []string{
			"PORT=" + strconv.Itoa(port),
			demo.EnvUnits + "=" + strconv.FormatFloat(unitsPerMs, 'f', -1, 64),
			demo.EnvName + "=" + strconv.Itoa(i+1),
		}
		return procSpec{name: name, env: env, argv: []string{bin, "demo-worker"}}
	})
}

// startWorkers starts n processes on free ports of 127.0.0.1, the i-th as
// spec(i, port) says, on l's worker CPUs, its output in logDir/NAME.log,
// and waits until each answers readyPath.
func startWorkers(ctx context.Context, n int, readyPath, logDir string, l Layout, spec func(i, port int) procSpec) (*Pool, error) {
	return startProcs(ctx, &Pool{client: newClient(5 * time.Second), readyPath: readyPath}, n, logDir, l, spec)
}

// startProcs is startWorkers into p, whose readiness (readyPath or ready)
// is set.
func startProcs(ctx context.Context, p *Pool, n int, logDir string, l Layout, spec func(i, port int) procSpec) (*Pool, error) {
	for i := range n {
		port, err := FreePort()
		if err != nil {
			p.Stop()
			return nil, err
		}
		sp := spec(i, port)
		sp.logPath = filepath.Join(logDir, sp.name+".log")
		sp.argv = l.workerArgv(sp.argv)
		proc, err := StartProcess(sp.name, sp.logPath, sp.env, sp.argv...)
		if err != nil {
			p.Stop()
			return nil, err
		}
		p.Procs = append(p.Procs, proc)
		p.specs = append(p.specs, sp)
		p.Addrs = append(p.Addrs, "127.0.0.1:"+strconv.Itoa(port))
	}
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

// StartPool starts one process (argv) that serves the demo routes on addr,
// and waits until it answers readyPath.
func StartPool(ctx context.Context, name, addr, logDir string, env []string, readyPath string, argv ...string) (*Pool, error) {
	spec := procSpec{name: name, logPath: filepath.Join(logDir, name+".log"), env: env, argv: argv}
	proc, err := StartProcess(spec.name, spec.logPath, spec.env, spec.argv...)
	if err != nil {
		return nil, err
	}
	p := &Pool{Procs: []*Process{proc}, Addrs: []string{addr}, specs: []procSpec{spec}, readyPath: readyPath, client: newClient(5 * time.Second)}
	if err := p.waitReady(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func (p *Pool) waitReady(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	for i := range p.Addrs {
		if err := p.waitOne(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// waitOne waits until the i-th process serves.
func (p *Pool) waitOne(ctx context.Context, i int) error {
	a := p.Addrs[i]
	if p.ready == nil {
		return WaitStarted(ctx, "http://"+a+p.readyPath, p.Procs[i])
	}
	return waitUntil(ctx, func(ctx context.Context) error { return p.ready(ctx, a) }, p.Procs[i])
}

// RestartOne stops the i-th process of the pool, starts it again as it
// was started, and waits until it is ready, as a deploy replaces one
// worker at a time; the others go on serving meanwhile. It does not run
// Warm. Not safe for concurrent use with Restart, Stop or another
// RestartOne; CPUTime may be called meanwhile.
func (p *Pool) RestartOne(ctx context.Context, i int) error {
	old := p.Procs[i]
	before := old.CPUTime()
	old.Stop(5 * time.Second)
	spec := p.specs[i]
	proc, err := StartProcess(spec.name, spec.logPath, spec.env, spec.argv...)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.Procs[i] = proc
	p.gone += before
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	return p.waitOne(ctx, i)
}

// Restart stops every process of the pool and starts it again as it was
// started (same address, same environment), then waits until each is
// ready. Counters start again from zero. Not safe for concurrent use with
// the pool's other methods.
func (p *Pool) Restart(ctx context.Context) error {
	p.Stop()
	for i, spec := range p.specs {
		proc, err := StartProcess(spec.name, spec.logPath, spec.env, spec.argv...)
		if err != nil {
			return err
		}
		p.Procs[i] = proc
	}
	if err := p.waitReady(ctx); err != nil {
		return err
	}
	if p.Warm != nil {
		return p.Warm(ctx)
	}
	return nil
}

// WaitStarted waits until url answers 2xx, failing at once if one of
// procs (the processes that serve it) exits first.
func WaitStarted(ctx context.Context, url string, procs ...*Process) error {
	return waitUntil(ctx, func(ctx context.Context) error { return WaitHTTP(ctx, url) }, procs...)
}

// waitUntil runs wait, which returns once what procs serve is ready or
// ctx is done, and fails at once if one of procs exits first.
func waitUntil(ctx context.Context, wait func(context.Context) error, procs ...*Process) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for _, proc := range procs {
		go func() {
			select {
			case <-proc.Exited():
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	err := wait(ctx)
	for _, proc := range procs {
		select {
		case <-proc.Exited():
			return fmt.Errorf("eval: %s exited before it was ready (see its log)", proc.Name)
		default:
		}
	}
	return err
}

// Stats returns the pool's counters, summed over its processes, with
// PeakInflight the highest of any one process.
func (p *Pool) Stats(ctx context.Context) (demo.Stats, error) {
	var sum demo.Stats
	for _, a := range p.Addrs {
		var buf bytes.Buffer
		status, err := get(ctx, p.client, "http://"+a+demo.StatsPath, &buf)
		if err != nil {
			return sum, fmt.Errorf("eval: stats of %s: %w", a, err)
		}
		if status != http.StatusOK {
			return sum, fmt.Errorf("eval: stats of %s: status %d", a, status)
		}
		var s demo.Stats
		if err := json.Unmarshal(buf.Bytes(), &s); err != nil {
			return sum, fmt.Errorf("eval: stats of %s: %w", a, err)
		}
		sum.Rendered += s.Rendered
		sum.Inflight += s.Inflight
		sum.PeakInflight = max(sum.PeakInflight, s.PeakInflight)
	}
	return sum, nil
}

// ErrStillBusy is returned by WaitIdle when the pool was still rendering
// when its bound ran out.
var ErrStillBusy = errors.New("eval: pool still rendering")

// WaitIdle polls the pool's stats every poll until no render is in flight
// and the rendered count has not moved since the previous poll (a request
// still in a socket buffer has not started yet), or until bound has
// passed. It returns the last stats it could read and how long it waited;
// the error wraps ErrStillBusy when bound ran out, or is ctx's.
func (p *Pool) WaitIdle(ctx context.Context, poll, bound time.Duration) (demo.Stats, time.Duration, error) {
	start := time.Now()
	bctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	prev := int64(-1)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var last demo.Stats
	for {
		// A renderer sharing its core among many renders answers late; an
		// error here only means "not known to be idle yet".
		s, err := p.Stats(bctx)
		if err == nil {
			last = s
			if s.Inflight == 0 && s.Rendered == prev {
				return s, time.Since(start), nil
			}
			prev = s.Rendered
		}
		select {
		case <-bctx.Done():
			if ctx.Err() != nil {
				return last, time.Since(start), ctx.Err()
			}
			return last, time.Since(start), fmt.Errorf("eval: waiting %v for an idle pool: %w", bound, ErrStillBusy)
		case <-tick.C:
		}
	}
}

// CPUTime returns the CPU time the pool's processes have used so far,
// those RestartOne replaced included.
func (p *Pool) CPUTime() time.Duration {
	if p.cpu != nil {
		return p.cpu()
	}
	p.mu.Lock()
	procs := slices.Clone(p.Procs)
	d := p.gone
	p.mu.Unlock()
	for _, proc := range procs {
		d += proc.CPUTime()
	}
	return d
}

// Stop stops every process of the pool.
func (p *Pool) Stop() {
	for _, proc := range p.Procs {
		proc.Stop(5 * time.Second)
	}
}
