package eval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/loadgen"
)

// hypernova runs scenario hypernova: the workers (Hypernova in devMode,
// one process per port) and their capacity straight; then each of
// HypernovaMultiples offered to the three setups in turn; then a rolling
// restart under load for each setup that has one.
func (s *Suite) hypernova(ctx context.Context) error {
	dir := filepath.Join(s.o.WorkDir, ScenarioHypernova)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	script, err := filepath.Abs(s.o.HypernovaWorker)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "hypernova")); err != nil {
		return fmt.Errorf("eval: the Hypernova worker's dependencies are not installed (cd %s && npm ci): %w", filepath.Dir(script), err)
	}
	items := s.o.HypernovaItems
	if items <= 0 {
		items = HypernovaItems
	}
	job := HypernovaJob(hypernovaPageNumber, items)
	info := HypernovaInfo{Worker: s.o.HypernovaWorker, Node: ToolVersion(s.o.NodeBin, "--version"), Job: string(job),
		Workers: s.o.Workers, Restart: map[string]string{}}

	pool, err := s.startHypernova(ctx, script, s.o.Workers, 0, job, dir)
	if err != nil {
		return err
	}
	var stops []func()
	defer func() {
		for _, stop := range slices.Backward(stops) {
			stop()
		}
	}()
	stops = append(stops, s.keep(pool))
	if err := s.hypernovaCapacity(ctx, pool, job, &info); err != nil {
		return err
	}

	coord, err := s.startHypernova(ctx, script, 1, s.o.Workers, job, dir)
	if err != nil {
		return err
	}
	stops = append(stops, s.keep(coord))
	// The coordinator queues without bound: its backlog of timed-out
	// jobs rendered on for seconds into the next setup's turn (0.8 of a
	// core, 2026-12-04), so each setup waits for the other pool too.
	targets := []*target{{name: SetupHypernovaCoordinator, url: "http://" + coord.Addrs[0] + "/", front: &Front{Name: SetupHypernovaCoordinator},
		pool: coord, quiet: []*Pool{pool}, cap10: info.CapacityRPS}}
	haproxy := s.o.NginxBin != "" && s.o.HAProxyBin != ""
	if haproxy {
		f, err := startNginxHAProxy(ctx, ScenarioHypernova+"-"+SetupNginxHA500ms, s.o.NginxBin, s.o.HAProxyBin,
			HAProxyConfig{Workers: pool.Addrs, QueueTimeout: 500 * time.Millisecond, Check: hypernovaCheck(), Redispatch: true},
			filepath.Join(dir, SetupNginxHA500ms), func(ctx context.Context, base string) error { return waitBatch(ctx, base, job) })
		if err != nil {
			return err
		}
		stops = append(stops, s.keepFront(f))
		targets = append(targets, &target{name: SetupNginxHA500ms, url: f.URL, front: f, pool: pool, quiet: []*Pool{coord}, cap10: info.CapacityRPS})
	}
	f, err := startSluice(ctx, ScenarioHypernova+"-"+SetupSluice, s.o.SluiceBin, SluiceConfig{Workers: pool.Addrs}, filepath.Join(dir, SetupSluice))
	if err != nil {
		return err
	}
	stops = append(stops, s.keepFront(f))
	targets = append(targets, &target{name: SetupSluice, url: f.URL, front: f, pool: pool, quiet: []*Pool{coord}, cap10: info.CapacityRPS})

	var runs []*RunResult
	for i, m := range HypernovaMultiples() {
		for _, t := range turns(targets, i) {
			r, err := s.retryNoisy(ctx, t, multipleName(m), func() (*RunResult, error) {
				return s.hypernovaRunOnce(ctx, t, m, multipleName(m), s.o.Phase, job, nil)
			})
			if err != nil {
				return err
			}
			if t.front.Admin != "" {
				r.WorkerLimits = workerLimits(ctx, t.front.Admin)
			}
			runs = append(runs, r)
		}
	}

	info.Restart[SetupHypernovaCoordinator] = "n/a: Hypernova's coordinator has no rolling restart (SIGTERM stops every worker; it forks a new one only for a worker that died)"
	rs, err := s.hypernovaRestarts(ctx, targets, script, job, dir, &info)
	if err != nil {
		return err
	}
	runs = append(runs, rs...)

	if err := s.writeJSON(ScenarioHypernova+".json", hypernovaFile{Scenario: ScenarioHypernova, Environment: s.env, Info: info, Runs: runs}); err != nil {
		return err
	}
	return s.writeHypernovaTable(info, runs)
}

// writeHypernovaTable writes hypernova.md.
func (s *Suite) writeHypernovaTable(info HypernovaInfo, runs []*RunResult) error {
	return s.writeFile(ScenarioHypernova+".md", []byte("# "+ScenarioHypernova+"\n\n"+HypernovaMarkdown(info, runs)))
}

// keep counts pool's CPU as the suite's (not the noise) until the returned
// stop, which also stops the pool.
func (s *Suite) keep(pool *Pool) func() {
	s.libs = append(s.libs, pool)
	return func() {
		pool.Stop()
		s.libs = slices.DeleteFunc(s.libs, func(p *Pool) bool { return p == pool })
	}
}

// keepFront is keep for a front.
func (s *Suite) keepFront(f *Front) func() {
	s.fronts = append(s.fronts, f)
	return func() {
		f.Stop()
		s.fronts = slices.DeleteFunc(s.fronts, func(g *Front) bool { return g == f })
	}
}

// startHypernova starts n Hypernova processes of script on free ports of
// 127.0.0.1: with cluster 0 each in devMode (one process serving its
// port), else each Hypernova's coordinator with cluster workers. It waits
// until each renders job and then warms them.
func (s *Suite) startHypernova(ctx context.Context, script string, n, cluster int, job []byte, logDir string) (*Pool, error) {
	name := "hypernova-worker"
	if cluster > 0 {
		name = "hypernova-coordinator"
	}
	p, err := startProcs(ctx, &Pool{client: newClient(5 * time.Second), ready: batchReady(job)}, n, logDir, s.o.Layout, func(i, port int) procSpec {
		env := []string{"PORT=" + strconv.Itoa(port)}
		for k, v := range hypernovaEnv {
			env = append(env, k+"="+v)
		}
		if cluster > 0 {
			env = append(env, "HYPERNOVA_WORKERS="+strconv.Itoa(cluster))
		}
		return procSpec{name: fmt.Sprintf("%s-%d", name, i+1), env: env, argv: []string{s.o.NodeBin, script}}
	})
	if err != nil {
		return nil, err
	}
	// V8 compiles the renderer as it runs: a first closed loop, not kept,
	// leaves the workers warm; so after every restart.
	urls := batchURLs(p.Addrs)
	clients := CapacityClients * max(n, cluster)
	p.Warm = func(ctx context.Context) error {
		_, err := CapacityPost(ctx, urls, clients/len(urls), 2*time.Second, false, jsonType, job)
		return err
	}
	if err := p.Warm(ctx); err != nil {
		p.Stop()
		return nil, err
	}
	return p, nil
}

func batchURLs(addrs []string) []string {
	var urls []string
	for _, a := range addrs {
		urls = append(urls, "http://"+a+"/"+hypernovaPath)
	}
	return urls
}

// batchReady waits until the Hypernova at addr renders job: it has no
// health route, and its port may be bound before it can render.
func batchReady(job []byte) func(ctx context.Context, addr string) error {
	return func(ctx context.Context, addr string) error {
		return waitBatch(ctx, "http://"+addr+"/", job)
	}
}

// waitBatch polls a POST of job to base's batch endpoint every 50 ms until
// it answers 200 with the job rendered, or ctx is done.
func waitBatch(ctx context.Context, base string, job []byte) error {
	c := newClient(time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		var buf bytes.Buffer
		status, err := post(ctx, c, base+hypernovaPath, jsonType, job, &buf)
		if err == nil && status == http.StatusOK {
			if _, err = ParseBatch(buf.Bytes(), hypernovaToken); err == nil {
				return nil
			}
		} else if err == nil {
			err = fmt.Errorf("status %d", status)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("eval: waiting for %s%s to render: %w (last error: %v)", base, hypernovaPath, ctx.Err(), err)
		case <-tick.C:
		}
	}
}

// hypernovaCapacity measures the devMode workers' capacity straight,
// NodeCapacityRuns times, and one answer's size, into info.
func (s *Suite) hypernovaCapacity(ctx context.Context, pool *Pool, job []byte, info *HypernovaInfo) error {
	var buf bytes.Buffer
	if _, err := post(ctx, newClient(5*time.Second), "http://"+pool.Addrs[0]+"/"+hypernovaPath, jsonType, job, &buf); err != nil {
		return err
	}
	if _, err := ParseBatch(buf.Bytes(), hypernovaToken); err != nil {
		return err
	}
	info.AnswerBytes = buf.Len()
	for range NodeCapacityRuns {
		s.waitQuiet(ctx)
		r, err := CapacityPost(ctx, batchURLs(pool.Addrs), CapacityClients, s.o.CapacityTime, false, jsonType, job)
		if err != nil {
			return err
		}
		if r.Successes == 0 {
			return fmt.Errorf("eval: %s: capacity: no success (%d errors)", ScenarioHypernova, r.Errors)
		}
		info.Capacity = append(info.Capacity, r.Rate)
	}
	info.CapacityRPS = slices.Max(info.Capacity)
	s.log.Info("capacity of the Hypernova workers", "rps", round1(info.CapacityRPS), "runs", info.Capacity, "answerBytes", info.AnswerBytes)
	return nil
}

// hypernovaRestartLoad is how long the load of a rolling-restart run
// lasts, for a phase: long enough for both workers to be replaced.
func hypernovaRestartLoad(phase time.Duration) time.Duration { return max(4*phase, 20*time.Second) }

// hypernovaEnv is every Hypernova worker's environment beside its port, the
// supervised sluice's included: React renders in production mode. (Before
// 2026-12-05 sluice's supervised workers were started without it, in
// development mode, and took 20-60% more CPU a render than HAProxy's.)
var hypernovaEnv = map[string]string{"NODE_ENV": "production"}

// hypernovaRestartDelay is when, into the load, the rolling restart
// starts.
const hypernovaRestartDelay = time.Second

// hypernovaRestarts runs a rolling restart at HypernovaRestartMultiple for
// nginx -> HAProxy (the workers restarted one at a time, as a deploy does,
// HAProxy's health checks taking each out) and for sluice (its own rolling
// restart of workers it supervises: a sluice of its own, started for it),
// each after the same load without a restart, the loss the restart adds
// to; Options.RestartRounds times, HAProxy's pair then sluice's each round.
func (s *Suite) hypernovaRestarts(ctx context.Context, targets []*target, script string, job []byte, dir string, info *HypernovaInfo) ([]*RunResult, error) {
	load := hypernovaRestartLoad(s.o.Phase)
	var ha *target
	for _, t := range targets {
		if t.name == SetupNginxHA500ms {
			ha = t
		}
	}
	if ha != nil {
		info.Restart[ha.name] = "each devMode worker stopped (SIGTERM), started again and waited for (it renders a job), one after the other, as a deploy does; HAProxy's health checks (POST /batch every " +
			HypernovaCheckInterval.String() + ", fall 2, rise 1) take it out and back; option redispatch"
	}
	var runs []*RunResult
	var sl *target
	var logf *os.File
	for round := range s.o.RestartRounds {
		if ha != nil {
			pair, err := s.hypernovaRestartPair(ctx, ha, round, load, job, func(ctx context.Context) error {
				for i := range ha.pool.Procs {
					if err := ha.pool.RestartOne(ctx, i); err != nil {
						return err
					}
				}
				return nil
			})
			runs = append(runs, pair...)
			if err != nil {
				return runs, err
			}
			if ha.pool.Warm != nil {
				if err := ha.pool.Warm(ctx); err != nil {
					return runs, err
				}
			}
		}
		if sl == nil {
			var stop func()
			var err error
			sl, logf, stop, err = s.supervisedHypernova(ctx, targets, script, job, dir, info)
			if err != nil {
				return runs, err
			}
			defer stop()
			if ha != nil {
				// From the next round on, HAProxy's runs wait for these
				// workers to be idle too.
				h := *ha
				h.quiet = append(slices.Clone(ha.quiet), sl.pool)
				ha = &h
			}
		}
		pair, err := s.hypernovaRestartPair(ctx, sl, round, load, job, func(ctx context.Context) error {
			var out bytes.Buffer
			status, err := post(ctx, newClient(5*time.Second), "http://"+sl.front.Admin+"/workers/restart", "text/plain", nil, &out)
			if err != nil {
				return err
			}
			if status != http.StatusAccepted {
				return fmt.Errorf("eval: POST /workers/restart: status %d: %s", status, out.String())
			}
			line, err := waitLog(ctx, logf, []string{"rolling restart done", "rolling restart failed"}, 100*time.Millisecond, load)
			if err != nil {
				return err
			}
			if !bytes.Contains([]byte(line), []byte("rolling restart done")) {
				return fmt.Errorf("eval: sluice: %s", line)
			}
			return nil
		})
		runs = append(runs, pair...)
		if err != nil {
			return runs, err
		}
	}
	return runs, nil
}

// hypernovaRestartPair runs t's load without a restart, then with roll
// during it, both marked as the round's repeat.
func (s *Suite) hypernovaRestartPair(ctx context.Context, t *target, round int, load time.Duration, job []byte, roll func(context.Context) error) ([]*RunResult, error) {
	base, err := s.hypernovaRunOnce(ctx, t, HypernovaRestartMultiple, restartBaseline, load, job, nil)
	if err != nil {
		return nil, err
	}
	base.Repeat = round
	r, err := s.hypernovaRunOnce(ctx, t, HypernovaRestartMultiple, restartPoint, load, job, roll)
	if err != nil {
		return []*RunResult{base}, err
	}
	r.Repeat = round
	return []*RunResult{base, r}, nil
}

// supervisedHypernova starts a sluice of its own supervising s.o.Workers
// Hypernova workers, warms them through it, and returns it as a target,
// its log opened at its end (for the rolling restart's lines) and what
// stops both.
func (s *Suite) supervisedHypernova(ctx context.Context, targets []*target, script string, job []byte, dir string, info *HypernovaInfo) (*target, *os.File, func(), error) {
	sdir := filepath.Join(dir, SetupSluice+"-supervised")
	f, err := startSluice(ctx, ScenarioHypernova+"-"+SetupSluice+"-supervised", s.o.SluiceBin,
		SluiceConfig{Command: s.o.Layout.workerArgv([]string{s.o.NodeBin, script}), Count: s.o.Workers, Env: hypernovaEnv}, sdir)
	if err != nil {
		return nil, nil, nil, err
	}
	unkeepFront := s.keepFront(f)
	// The supervised workers are sluice's children, each in a process
	// group of its own: a pool without processes stands for them, its CPU
	// theirs, the replaced ones' included; the front's is sluice's own.
	sup := f.Procs[0].PID()
	f.cpu = func() time.Duration { own, _ := supervisedCPU("/proc", sup); return own }
	workers := &Pool{cpu: func() time.Duration { _, w := supervisedCPU("/proc", sup); return w }}
	unkeep := s.keep(workers)
	stop := func() { unkeep(); unkeepFront() }
	t := &target{name: SetupSluice, url: f.URL, front: f, pool: workers, cap10: info.CapacityRPS}
	for _, o := range targets {
		if !slices.Contains(t.quiet, o.pool) {
			t.quiet = append(t.quiet, o.pool)
		}
	}
	// Warm them, through sluice, as the devMode workers were.
	if _, err := CapacityPost(ctx, []string{f.URL + hypernovaPath}, CapacityClients*s.o.Workers, 2*time.Second, false, jsonType, job); err != nil {
		stop()
		return nil, nil, nil, err
	}
	info.Restart[SetupSluice] = "a sluice of its own supervising " + strconv.Itoa(s.o.Workers) + " workers (workers.command: node worker.js, count " + strconv.Itoa(s.o.Workers) +
		", env NODE_ENV=production as the other setups' workers, every other key its default), rolled by POST /workers/restart on its admin listener; sluice starts each new worker, waits until it accepts a connection, then drains and stops the old one"
	logf, err := os.Open(filepath.Join(sdir, "sluice.log"))
	if err != nil {
		stop()
		return nil, nil, nil, err
	}
	if _, err := logf.Seek(0, io.SeekEnd); err != nil {
		logf.Close()
		stop()
		return nil, nil, nil, err
	}
	return t, logf, func() { logf.Close(); stop() }, nil
}

// restartable is a pool of renderers: its CPU time, and a restart.
type restartable interface {
	CPUTime() time.Duration
	Restart(ctx context.Context) error
}

// idleRenderers waits until each of pools is idle (waitCPUIdle, 5% of a
// core, up to bound each), and restarts one still busy after that: what
// an earlier run left them is rendered, or dropped, before setup's run.
func idleRenderers(ctx context.Context, log *slog.Logger, setup string, bound time.Duration, pools ...restartable) error {
	for _, p := range pools {
		if _, err := waitCPUIdle(ctx, p.CPUTime, 0.05, 200*time.Millisecond, bound); err != nil {
			if ctx.Err() != nil {
				return err
			}
			log.Warn("renderers busy before a run; restarting them", "setup", setup, "err", err)
			if err := p.Restart(ctx); err != nil {
				return err
			}
		}
	}
	return nil
}

// hypernovaRunOnce offers multiple of t's capacity as POST /batch jobs for
// d, once t's renderers are idle, keep-alive clients (as the application
// servers that call Hypernova keep their connections); during, if set,
// runs from hypernovaRestartDelay into the load, and the run waits for it
// and records how long it took in the run's note. Renders are not
// counted: Hypernova has no counters (Rendered and Wasted are -1).
func (s *Suite) hypernovaRunOnce(ctx context.Context, t *target, multiple float64, point string, d time.Duration, job []byte, during func(context.Context) error) (*RunResult, error) {
	quiet := []restartable{t.pool}
	for _, p := range t.quiet {
		quiet = append(quiet, p)
	}
	if err := idleRenderers(ctx, s.log, t.name, s.o.DrainBound, quiet...); err != nil {
		return nil, err
	}
	res := &RunResult{Scenario: ScenarioHypernova, Setup: t.name, Point: point, Multiple: multiple, KeepAlive: true,
		Capacity: t.cap10, LoadAvg: demo.LoadAverage()}
	cpu0 := readCPU(t)
	done := make(chan error, 1)
	var took time.Duration
	if during != nil {
		go func() {
			select {
			case <-ctx.Done():
				done <- ctx.Err()
				return
			case <-time.After(hypernovaRestartDelay):
			}
			t0 := time.Now()
			err := during(ctx)
			took = time.Since(t0)
			done <- err
		}()
	}
	reports, err := offer(ctx, t, true, 0, []stream{{
		query:  hypernovaPath,
		phases: []loadgen.Phase{{Name: point, Rate: multiple * t.cap10, Duration: d}},
		tweak: func(c *loadgen.Config) {
			c.Method, c.Body = http.MethodPost, job
			c.Header = http.Header{"Content-Type": {jsonType}}
		},
	}})
	res.CPU.RenderersLoad = (t.pool.CPUTime() - cpu0.pool).Seconds()
	res.CPU.LoadWall = time.Since(cpu0.wall).Seconds()
	if during != nil {
		if derr := <-done; derr != nil {
			return nil, fmt.Errorf("eval: %s: the rolling restart: %w", t.name, derr)
		}
		res.Note = fmt.Sprintf("rolling restart from %v into the load, took %v", hypernovaRestartDelay, took.Round(10*time.Millisecond))
		if took+hypernovaRestartDelay > d {
			res.Note += "; it outlasted the load"
		}
	}
	if err != nil {
		return nil, err
	}
	res.setCPU(t, cpu0)
	res.setFigures(reports, demo.Stats{}, demo.Stats{}, false)
	tot := reports[0].Total
	s.log.Info("run", "scenario", ScenarioHypernova, "setup", t.name, "point", point,
		"offered", round1(tot.OfferedRate), "goodput", round1(tot.Goodput), "delivered", round1(tot.Delivered), "success", round3(tot.SuccessRatio),
		"p99", tot.Latency.P99.Round(time.Millisecond), "errors", tot.Errors, "note", res.Note)
	return res, nil
}
