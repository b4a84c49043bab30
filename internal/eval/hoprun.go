package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// HopInfo records scenario hop-cpu as it was run.
type HopInfo struct {
	Node        string  `json:"node"`
	Workers     int     `json:"workers"`
	Concurrency int     `json:"concurrency_per_worker"`
	Rate        float64 `json:"fixed_rate_rps"`
	Clients     int     `json:"closed_loop_clients"`
	Rounds      int     `json:"rounds"`
	Phase       string  `json:"phase"`
	Closed      string  `json:"closed_loop_time"`
	Spin        string  `json:"overload_spin"`
	// SpinCapacity is the spinning workers' closed-loop throughput,
	// straight, each round's; the overload's multiples refer to the
	// highest.
	SpinCapacity []float64 `json:"overload_capacity_rps_runs"`
	Baseline     string    `json:"baseline_sluice,omitempty"`
}

// hopFile is scenario hop-cpu's JSON file.
type hopFile struct {
	Scenario    string      `json:"scenario"`
	Environment Environment `json:"environment"`
	Info        HopInfo     `json:"info"`
	Points      []HopPoint  `json:"points"`
	Summary     []HopRow    `json:"summary"`
}

// hopCPU runs scenario hop-cpu: two fresh trivial Node.js workers, the
// fronts over them, HopCPURounds rounds of every variant with the fronts
// taking turns, then the overload rounds on spinning workers, the floors
// (hopfloor.go) beside the fronts.
func (s *Suite) hopCPU(ctx context.Context) error {
	if s.o.NginxBin == "" || s.o.HAProxyBin == "" {
		return errors.New("eval: scenario hop-cpu compares with nginx -> HAProxy: give both binaries")
	}
	dir := filepath.Join(s.o.WorkDir, ScenarioHopCPU)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	pool, err := startHopWorkers(ctx, s.o.NodeBin, s.o.Workers, dir, s.o.Layout)
	if err != nil {
		return err
	}
	s.libs = append(s.libs, pool) // its CPU is the suite's, not the noise
	var fronts []*hopFront
	defer func() {
		for _, f := range fronts {
			f.front.Stop()
			s.fronts = slices.DeleteFunc(s.fronts, func(g *Front) bool { return g == f.front })
		}
		pool.Stop()
		s.libs = slices.DeleteFunc(s.libs, func(p *Pool) bool { return p == pool })
	}()
	if fronts, err = s.startHopFronts(ctx, pool, dir); err != nil {
		return err
	}
	info := HopInfo{Node: ToolVersion(s.o.NodeBin, "--version"), Workers: len(pool.Addrs), Concurrency: HopCPUConcurrency,
		Rate: s.hopRate(), Clients: HopCPUClients, Rounds: HopCPURounds, Phase: s.o.Phase.String(),
		Closed: s.o.CapacityTime.String(), Spin: HopCPUSpin.String(), Baseline: s.o.HopBaseline}
	points, err := s.hopRounds(ctx, fronts)
	if err != nil {
		return err
	}
	// The floors take part in the overload only, after the fronts; they
	// are stopped with them.
	floors, err := startHopFloors(ctx, s.o.NginxBin, dir)
	for _, f := range floors {
		fronts = append(fronts, f)
		s.fronts = append(s.fronts, f.front)
	}
	if err != nil {
		return err
	}
	more, capacity, err := s.hopOverload(ctx, fronts, pool)
	if err != nil {
		return err
	}
	info.SpinCapacity = capacity
	points = append(points, more...)
	return s.writeHopCPU(info, points)
}

// startHopFronts starts the fronts of scenario hop-cpu over pool: sluice,
// the baseline sluice if one was given, nginx -> HAProxy. It returns those
// it started, also on error, for the caller to stop.
func (s *Suite) startHopFronts(ctx context.Context, pool *Pool, dir string) ([]*hopFront, error) {
	var fronts []*hopFront
	start := func(name string, f func() (*hopFront, error)) error {
		hf, err := f()
		if err != nil {
			return fmt.Errorf("eval: hop-cpu: starting %s: %w", name, err)
		}
		fronts = append(fronts, hf)
		s.fronts = append(s.fronts, hf.front)
		return nil
	}
	if err := start(HopSluice, func() (*hopFront, error) {
		return startHopSluice(ctx, HopSluice, s.o.SluiceBin, pool.Addrs, filepath.Join(dir, HopSluice))
	}); err != nil {
		return fronts, err
	}
	if s.o.HopBaseline != "" {
		if err := start(HopBaseline, func() (*hopFront, error) {
			return startHopSluice(ctx, HopBaseline, s.o.HopBaseline, pool.Addrs, filepath.Join(dir, HopBaseline))
		}); err != nil {
			return fronts, err
		}
	}
	if err := start(HopNginxHA, func() (*hopFront, error) {
		return startHopNginxHAProxy(ctx, HopNginxHA, s.o.NginxBin, s.o.HAProxyBin, pool.Addrs, filepath.Join(dir, HopNginxHA))
	}); err != nil {
		return fronts, err
	}
	return fronts, nil
}

// hopRounds measures every variant, fixed rate then closed loop, the
// fronts taking turns at each.
func (s *Suite) hopRounds(ctx context.Context, fronts []*hopFront) ([]HopPoint, error) {
	var out []HopPoint
	for round := range HopCPURounds {
		for _, v := range hopVariants() {
			for _, f := range fronts {
				p, err := s.hopFixed(ctx, f, v, round)
				if err != nil {
					return nil, err
				}
				out = append(out, p)
			}
			for _, f := range fronts {
				out = append(out, s.hopClosed(ctx, f, v, round))
			}
		}
	}
	return out, nil
}

func (f *hopFront) url(v hopVariant) string {
	if v.Client == "h2" {
		return f.h2 + v.path()
	}
	return f.h1 + v.path()
}

func (s *Suite) hopRate() float64 {
	if s.o.HopRate > 0 {
		return s.o.HopRate
	}
	return HopCPURate
}

// hopFixed offers Options.HopRate requests per second for Options.Phase.
func (s *Suite) hopFixed(ctx context.Context, f *hopFront, v hopVariant, round int) (HopPoint, error) {
	s.waitQuiet(ctx)
	tr := hopTransport(v.Client, 1024)
	defer tr.CloseIdleConnections()
	p := HopPoint{Setup: f.name, Round: round, Body: v.Body, Client: v.Client, Mode: "fixed", Offered: s.hopRate()}
	m := s.meter(f.front)
	rep, err := hopOpenLoop(ctx, f.url(v), p.Offered, s.o.Phase, tr)
	m.stop(&p)
	if err != nil {
		return p, fmt.Errorf("eval: hop-cpu: %s: %w", f.name, err)
	}
	fillFromReport(&p, rep)
	s.log.Info("hop-cpu", "setup", f.name, "round", round, "body", v.Body, "client", v.Client, "mode", p.Mode,
		"rps", round1(p.Rate), "cpuPer1000ms", round1(p.CPUPer1000()), "errors", p.Errors, "others", round3(p.Others))
	return p, nil
}

// hopClosed runs HopCPUClients closed-loop clients for
// Options.CapacityTime.
func (s *Suite) hopClosed(ctx context.Context, f *hopFront, v hopVariant, round int) HopPoint {
	s.waitQuiet(ctx)
	tr := hopTransport(v.Client, HopCPUClients)
	defer tr.CloseIdleConnections()
	p := HopPoint{Setup: f.name, Round: round, Body: v.Body, Client: v.Client, Mode: "closed"}
	m := s.meter(f.front)
	r := hopClosedLoop(ctx, f.url(v), HopCPUClients, s.o.CapacityTime, tr)
	m.stop(&p)
	p.Successes, p.Errors = r.successes, r.errors
	if r.elapsed > 0 {
		p.Rate = float64(r.successes) / r.elapsed.Seconds()
	}
	s.log.Info("hop-cpu", "setup", f.name, "round", round, "body", v.Body, "client", v.Client, "mode", p.Mode,
		"rps", round1(p.Rate), "cpuPer1000ms", round1(p.CPUPer1000()), "errors", p.Errors, "others", round3(p.Others))
	return p
}

// hopOverload measures, each round, the spinning workers' capacity
// straight, then offers each front HopCPUMultiples of the highest so far
// for Options.Phase.
func (s *Suite) hopOverload(ctx context.Context, fronts []*hopFront, pool *Pool) ([]HopPoint, []float64, error) {
	query := fmt.Sprintf("?spin=%d", HopCPUSpin.Milliseconds())
	var direct []string
	for _, a := range pool.Addrs {
		direct = append(direct, "http://"+a+"/"+query)
	}
	var out []HopPoint
	var caps []float64
	for round := range HopCPURounds {
		s.waitQuiet(ctx)
		r, err := Capacity(ctx, direct, CapacityClients, s.o.CapacityTime, false)
		if err != nil {
			return nil, nil, err
		}
		if r.Successes == 0 {
			return nil, nil, fmt.Errorf("eval: hop-cpu: capacity of the spinning workers: no success (%d errors)", r.Errors)
		}
		caps = append(caps, r.Rate)
		capacity := slices.Max(caps)
		for _, m := range HopCPUMultiples() {
			for _, f := range fronts {
				p, err := s.hopOverloadPoint(ctx, f, pool, query, m, capacity, round)
				if err != nil {
					return nil, nil, err
				}
				out = append(out, p)
			}
		}
	}
	return out, caps, nil
}

func (s *Suite) hopOverloadPoint(ctx context.Context, f *hopFront, pool *Pool, query string, m, capacity float64, round int) (HopPoint, error) {
	s.waitQuiet(ctx)
	tr := hopTransport("h1", 1024)
	defer tr.CloseIdleConnections()
	p := HopPoint{Setup: f.name, Round: round, Body: "spin", Client: "h1", Mode: "overload", Multiple: m, Offered: m * capacity}
	meter := s.meter(f.front)
	rep, err := hopOpenLoop(ctx, f.h1+query, p.Offered, s.o.Phase, tr)
	meter.stop(&p)
	if err != nil {
		return p, fmt.Errorf("eval: hop-cpu: %s: %w", f.name, err)
	}
	fillFromReport(&p, rep)
	s.log.Info("hop-cpu overload", "setup", f.name, "round", round, "multiple", m, "goodput", round1(p.Rate),
		"shed", p.Shed, "errors", p.Errors, "frontCores", round3(p.Share()), "others", round3(p.Others))
	// The workers may still be spinning on requests nobody waits for:
	// the next measurement starts when they answer at once again.
	waitIdle(ctx, pool.Addrs)
	return p, nil
}

// waitIdle waits, at most 30 s, until every worker at addrs answers its
// readiness path within 20 ms: nothing is queued in it any more.
func waitIdle(ctx context.Context, addrs []string) {
	c := newClient(5 * time.Second)
	deadline := time.Now().Add(30 * time.Second)
	for _, a := range addrs {
		for time.Now().Before(deadline) && ctx.Err() == nil {
			t0 := time.Now()
			if status, err := get(ctx, c, "http://"+a+hopReadyPath, io.Discard); err == nil && status == 200 && time.Since(t0) < 20*time.Millisecond {
				break
			}
		}
	}
}
