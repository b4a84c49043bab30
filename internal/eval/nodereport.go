package eval

import (
	"fmt"
	"math"
	"strings"

	"github.com/sluicehq/sluice/internal/chart"
)

// The Node.js scenarios' figures: per setup, load and client mode the
// goodput, the share shed, the p99 of successes, the wasted renders and
// the workers' busy share; and sluice's defaults against the issue's
// targets.

// BusyShare is the share of the wall time the run's renderer processes
// were on CPU while the load ran (CPUUse.RenderersLoad over LoadWall, per
// worker), or NaN if unknown. A Node.js process's CPU time includes its
// garbage collector's and libuv's threads, so it can exceed 1 slightly.
func BusyShare(r *RunResult, workers int) float64 {
	if r.CPU.LoadWall <= 0 || workers <= 0 {
		return math.NaN()
	}
	return r.CPU.RenderersLoad / (r.CPU.LoadWall * float64(workers))
}

// ShedShare is the share of a run's requests the front turned away with a
// status (503 of any reason, 429) rather than serving or timing out.
func ShedShare(r *RunResult) float64 {
	tot := r.Reports[0].Total
	if tot.Requests == 0 {
		return math.NaN()
	}
	var shed int64
	for k, v := range tot.Errors {
		if k == "429" || k == "503" || strings.HasPrefix(k, "503:") {
			shed += v
		}
	}
	return float64(shed) / float64(tot.Requests)
}

// FailedShare is the share of a run's requests that did not succeed.
func FailedShare(r *RunResult) float64 {
	tot := r.Reports[0].Total
	if tot.Requests == 0 {
		return math.NaN()
	}
	return 1 - tot.SuccessRatio
}

// nodeSetupsIn returns the setups of runs in the order they first ran.
func nodeSetupsIn(runs []*RunResult) []string {
	var names []string
	seen := map[string]bool{}
	for _, r := range runs {
		if !seen[r.Setup] {
			seen[r.Setup] = true
			names = append(names, r.Setup)
		}
	}
	return names
}

func clientModes(runs []*RunResult) []bool {
	var kas []bool
	for _, ka := range []bool{true, false} {
		for _, r := range runs {
			if r.KeepAlive == ka {
				kas = append(kas, ka)
				break
			}
		}
	}
	return kas
}

func (s *Suite) writeNode(scenario string, info NodeInfo, runs []*RunResult) error {
	if err := s.writeJSON(scenario+".json", nodeFile{Scenario: scenario, Environment: s.env, Workload: info, Runs: runs}); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "## %s\n\n%s\n\n", scenario, nodeDescription(info))
	setups := nodeSetupsIn(runs)
	for _, ka := range clientModes(runs) {
		md.WriteString(nodeTables(info, runs, setups, ka))
		if err := s.writeChart(fmt.Sprintf("%s-goodput-%s.svg", scenario, kaName(ka)), nodeGoodputChart(scenario, info, runs, setups, ka)); err != nil {
			return err
		}
		fmt.Fprintf(&md, "### sluice (defaults) against the targets, %s\n\n%s\n", kaTitle(ka), nodeTargets(info, runs, ka).Markdown())
	}
	md.WriteString("### Every run\n\n")
	md.WriteString(nodeDetailTable(info, runs).Markdown())
	return s.writeFile(scenario+".md", []byte(md.String()))
}

// nodeGoodputChart is the goodput of each setup at each load in client
// mode ka.
func nodeGoodputChart(scenario string, info NodeInfo, runs []*RunResult, setups []string, ka bool) *chart.Chart {
	good := &chart.Chart{
		Title:    fmt.Sprintf("%s: goodput vs offered load, %s", scenario, kaTitle(ka)),
		Subtitle: fmt.Sprintf("GET %s on %d Node.js workers, client timeout 1 s; %% of their measured capacity (%.0f/s)", info.Query, info.Workers, info.CapacityRPS),
		XLabel:   "offered load (multiple of capacity, log scale)", YLabel: "goodput (% of capacity)",
		LogX: true, Dots: true, XTicks: NodeMultiples(),
		HLines: []chart.Mark{{Value: 100, Label: "capacity"}},
	}
	for _, setup := range setups {
		// The fixed sweep and the peers dashed, sluice's defaults solid.
		ser := chart.Series{Name: setup}
		if setup != SetupSluice {
			ser.Dash = "6 3"
		}
		for _, m := range NodeMultiples() {
			if g := group(runs, setup, multipleName(m), ka); len(g) > 0 {
				ser.X, ser.Y = append(ser.X, m), append(ser.Y, 100*goodputShare(g[0]))
			}
		}
		good.Series = append(good.Series, ser)
	}
	return good
}

// nodeTables returns the Markdown of the tables of each setup at each load
// in client mode ka: goodput, sheds, p99, wasted renders, busy workers.
func nodeTables(info NodeInfo, runs []*RunResult, setups []string, ka bool) string {
	tables := []struct {
		title string
		cell  func(*RunResult) string
	}{
		{"Goodput, responses/s (% of capacity)", func(r *RunResult) string {
			return fmt.Sprintf("%s (%s)", fmtRate(r.Reports[0].Total.Goodput), pct(goodputShare(r)))
		}},
		{"Delivered, responses/s ended within the phase (a queue's answers after it not counted)", func(r *RunResult) string {
			return fmtRate(r.Reports[0].Total.Delivered)
		}},
		{"Shed (503/429) / all failures, share of requests", func(r *RunResult) string {
			return pct(ShedShare(r)) + " / " + pct(FailedShare(r))
		}},
		{"p99 latency of successes", func(r *RunResult) string { return fmtMS(r.Reports[0].Total.Latency.P99) }},
		{"Wasted renders (share of all renders)", wastedCell},
		{"Workers' busy share of the wall time while the load ran", func(r *RunResult) string { return pct(BusyShare(r, info.Workers)) }},
	}
	var md strings.Builder
	for _, tb := range tables {
		t := &Table{Header: []string{"setup"}}
		for _, m := range NodeMultiples() {
			t.Header = append(t.Header, multipleName(m))
		}
		for _, setup := range setups {
			row := []string{setup}
			for _, m := range NodeMultiples() {
				if g := group(runs, setup, multipleName(m), ka); len(g) > 0 {
					row = append(row, tb.cell(g[0]))
				} else {
					row = append(row, "–")
				}
			}
			t.Add(row...)
		}
		fmt.Fprintf(&md, "### %s, %s\n\n%s\n", tb.title, kaTitle(ka), t.Markdown())
	}
	return md.String()
}

func nodeDescription(info NodeInfo) string {
	page := "the example's page (200 listing cards)"
	if info.Items > 0 {
		page = fmt.Sprintf("a page of %d listing cards (BENCH_PAGE_ITEMS)", info.Items)
	}
	if info.Renders > 1 {
		page += fmt.Sprintf(", rendered %d times a request (BENCH_RENDERS)", info.Renders)
	}
	if len(info.QueryMix) > 0 {
		var mix []string
		for _, w := range info.QueryMix {
			mix = append(mix, fmt.Sprintf("`%s` %s", w.Value, fmtRate(w.Weight)))
		}
		page += ", each request adding a query drawn by weight from " + strings.Join(mix, ", ")
	}
	wait := ""
	if info.IOWait > 0 {
		wait = fmt.Sprintf(", after a %v wait on a timer (the data fetch)", info.IOWait)
	}
	var lat []string
	for _, l := range info.CapacityLatency {
		lat = append(lat, fmt.Sprintf("%.1f", l))
	}
	best := "the sweep did not run"
	if info.BestFixed > 0 {
		best = fmt.Sprintf("best of the sweep (%s): %d", joinInts(info.Fixed), info.BestFixed)
	}
	return fmt.Sprintf("`node -r internal/eval/node/counters.js %s` (node %s), %d workers: GET `/%s`, %s%s. "+
		"Capacity %.0f responses/s, the highest of %s (closed loop, %d clients per worker, straight to the workers; mean latency %s ms). "+
		"Fixed per-worker concurrency: %s.",
		info.Worker, info.Node, info.Workers, info.Query, page, wait,
		info.CapacityRPS, fmtRates(info.Capacity), info.CapacityClients, strings.Join(lat, ", "), best)
}

func fmtRates(xs []float64) string {
	var s []string
	for _, x := range xs {
		s = append(s, fmtRate(x))
	}
	return strings.Join(s, ", ")
}

// nodeTargets checks sluice's defaults against the targets at
// each load in one client mode: at least 95% of the best fixed setting's
// goodput and at least the best HAProxy setup's, no wasted render, p99 of
// successes within the workload's bound, at 1x at most 5% shed (all
// failures), from 2x the workers busy at least 90% of the wall time.
func nodeTargets(info NodeInfo, runs []*RunResult, ka bool) *Table {
	t := &Table{Header: []string{"load", "sluice goodput/s", "best fixed", "≥ 95% of it", "best HAProxy", "≥ it", "wasted = 0", "p99 ≤ " + fmtMS(info.P99Target), "failed (≤ 5% at 1x)", "busy (≥ 90% from 2x)"}}
	for _, m := range NodeMultiples() {
		p := multipleName(m)
		sl := group(runs, SetupSluice, p, ka)
		if len(sl) == 0 {
			continue
		}
		r := sl[0]
		tot := r.Reports[0].Total
		fname, fg := bestGoodput(runs, p, ka, NodeFamilyFixed+"-")
		hname, hg := bestGoodput(runs, p, ka, NodeFamilyHAProxy)
		cmpCell := func(g float64, ok bool) string {
			if g < 0 {
				return "–"
			}
			return mark(ok)
		}
		row := []string{p, fmtRate(tot.Goodput)}
		if fg >= 0 {
			row = append(row, fmt.Sprintf("%s %s (%s)", fname, fmtRate(fg), pct(tot.Goodput/fg)))
		} else {
			row = append(row, "–")
		}
		row = append(row, cmpCell(fg, tot.Goodput >= 0.95*fg))
		if hg >= 0 {
			row = append(row, fmt.Sprintf("%s %s", hname, fmtRate(hg)))
		} else {
			row = append(row, "–")
		}
		row = append(row, cmpCell(hg, tot.Goodput >= hg))
		row = append(row, mark(r.Wasted == 0)+" ("+wastedCell(r)+")")
		row = append(row, mark(tot.Latency.P99 > 0 && tot.Latency.P99 <= info.P99Target)+" ("+fmtMS(tot.Latency.P99)+")")
		failed := FailedShare(r)
		if m == 1 {
			row = append(row, mark(failed <= 0.05)+" ("+pct(failed)+")")
		} else {
			row = append(row, pct(failed))
		}
		busy := BusyShare(r, info.Workers)
		if m >= 2 {
			row = append(row, mark(busy >= 0.9)+" ("+pct(busy)+")")
		} else {
			row = append(row, pct(busy))
		}
		t.Add(row...)
	}
	return t
}

// mark is a target's cell: met or, in bold, not.
func mark(ok bool) string {
	if ok {
		return "yes"
	}
	return "**no**"
}

// bestGoodput returns the setup whose name begins with prefix that had the
// most goodput at point in client mode ka, and that goodput; "–" and -1
// when none ran.
func bestGoodput(runs []*RunResult, point string, ka bool, prefix string) (string, float64) {
	name, g := "–", -1.0
	for _, o := range runs {
		if o.Point == point && o.KeepAlive == ka && strings.HasPrefix(o.Setup, prefix) && o.Reports[0].Total.Goodput > g {
			name, g = o.Setup, o.Reports[0].Total.Goodput
		}
	}
	return name, g
}

func nodeDetailTable(info NodeInfo, runs []*RunResult) *Table {
	t := &Table{Header: []string{"setup", "client", "load", "offered/s", "goodput/s", "delivered/s", "% of capacity", "shed", "p50", "p99", "wasted renders", "busy", "CPU ms per render", "per-worker limits after", "drain", "cores: renderers / front / generator", "other load", "failures by kind"}}
	for _, r := range runs {
		tot := r.Reports[0].Total
		perRender := "–"
		if r.Rendered > 0 {
			perRender = fmt.Sprintf("%.1f", 1000*r.CPU.Renderers/float64(r.Rendered))
		}
		t.Add(r.Setup, kaName(r.KeepAlive), r.Point, fmtRate(tot.OfferedRate), fmtRate(tot.Goodput), fmtRate(tot.Delivered),
			pct(goodputShare(r)), pct(ShedShare(r)), fmtMS(tot.Latency.P50), fmtMS(tot.Latency.P99),
			wastedCell(r), pct(BusyShare(r, info.Workers)), perRender, fmtLimits(r.WorkerLimits), fmtSecs(r.Drain, r.DrainCapped), cores(r), otherLoad(r),
			TopErrors(tot.Errors, 3))
	}
	return t
}

// rewriteNode redraws a Node.js scenario's tables and charts from its
// JSON file's contents.
func rewriteNode(dir string, f nodeFile) error {
	s := &Suite{o: Options{OutDir: dir}, env: f.Environment}
	return s.writeNode(f.Scenario, f.Workload, f.Runs)
}

func fmtLimits(ls []int) string {
	if len(ls) == 0 {
		return "–"
	}
	return joinInts(ls)
}
