package eval

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/chart"
	"github.com/sluicehq/sluice/internal/loadgen"
)

// writeJSON writes v as indented JSON to OutDir/name.
func (s *Suite) writeJSON(name string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(s.o.OutDir, name), append(b, '\n'), 0o644)
}

func (s *Suite) writeFile(name string, b []byte) error {
	return os.WriteFile(filepath.Join(s.o.OutDir, name), b, 0o644)
}

func (s *Suite) writeChart(name string, c *chart.Chart) error {
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		return err
	}
	return s.writeFile(name, b.Bytes())
}

// Rewrite reads the scenario JSON files in dir (as a run of the suite
// wrote them) and writes their tables and charts again, so that a change
// of presentation needs no new measurement. Scenarios without a file are
// skipped.
func Rewrite(dir string) error {
	for _, name := range Scenarios() {
		b, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return err
		}
		if name == ScenarioHypernova {
			var f hypernovaFile
			if err := json.Unmarshal(b, &f); err != nil {
				return fmt.Errorf("eval: %s.json: %w", name, err)
			}
			if err := (&Suite{o: Options{OutDir: dir}}).writeHypernovaTable(f.Info, f.Runs); err != nil {
				return err
			}
			continue
		}
		if IsNodeScenario(name) {
			var f nodeFile
			if err := json.Unmarshal(b, &f); err != nil {
				return fmt.Errorf("eval: %s.json: %w", name, err)
			}
			if err := rewriteNode(dir, f); err != nil {
				return err
			}
			continue
		}
		var f scenarioFile
		if err := json.Unmarshal(b, &f); err != nil {
			return fmt.Errorf("eval: %s.json: %w", name, err)
		}
		s := &Suite{o: Options{OutDir: dir}, env: f.Environment}
		for _, r := range f.Runs {
			if len(r.Reports) == 1 {
				r.Series = nil // written by older versions; the report has it
			}
			if !slices.Contains(s.o.KeepAlive, r.KeepAlive) {
				s.o.KeepAlive = append(s.o.KeepAlive, r.KeepAlive)
			}
		}
		for _, h := range f.Hop {
			if !slices.Contains(s.o.KeepAlive, h.KeepAlive) {
				s.o.KeepAlive = append(s.o.KeepAlive, h.KeepAlive)
			}
		}
		switch name {
		case ScenarioGoodput:
			err = s.writeGoodput(f.Runs)
		case ScenarioDrop, ScenarioRetry:
			err = s.writeTimeline(name, f.Runs, timelineMarks(name, f.Runs)...)
		case ScenarioTenants, ScenarioHetero:
			err = s.writeClasses(name, f.Runs)
		case ScenarioHop:
			err = s.writeHop(f.Hop)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// timelineMarks recovers a timeline scenario's phase boundaries from its
// first run: the lengths of the phases before the one the figure is about.
func timelineMarks(scenario string, runs []*RunResult) []time.Duration {
	if len(runs) == 0 || len(runs[0].Reports) == 0 {
		return nil
	}
	ph := runs[0].Reports[0].Phases
	switch {
	case scenario == ScenarioDrop && len(ph) >= 1:
		return []time.Duration{ph[0].Phase.Duration}
	case scenario == ScenarioRetry && len(ph) >= 2:
		return []time.Duration{ph[0].Phase.Duration, ph[1].Phase.Duration}
	}
	return nil
}

// scenarioFile is what a scenario's JSON file holds.
type scenarioFile struct {
	Scenario    string       `json:"scenario"`
	Environment Environment  `json:"environment"`
	Runs        []*RunResult `json:"runs,omitempty"`
	Hop         []HopResult  `json:"hop,omitempty"`
}

// Table is a Markdown table under construction.
type Table struct {
	Header []string
	Rows   [][]string
}

// Add appends a row.
func (t *Table) Add(cells ...string) { t.Rows = append(t.Rows, cells) }

// Markdown renders the table, numbers right-aligned (every column but the
// first).
func (t *Table) Markdown() string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(t.Header, " | ") + " |\n|")
	for i := range t.Header {
		if i == 0 {
			b.WriteString("---|")
		} else {
			b.WriteString("---:|")
		}
	}
	b.WriteString("\n")
	for _, r := range t.Rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

func pct(f float64) string {
	if math.IsNaN(f) {
		return "–"
	}
	return fmt.Sprintf("%.0f%%", 100*f)
}

func fmtMS(d time.Duration) string {
	if d <= 0 {
		return "–"
	}
	if d < 10*time.Millisecond {
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond))
}

func fmtRate(f float64) string { return fmt.Sprintf("%.0f", f) }

func fmtSecs(d time.Duration, capped bool) string {
	s := fmt.Sprintf("%.1f s", d.Seconds())
	if capped {
		return "≥ " + s
	}
	return s
}

// TopErrors formats the n most frequent error kinds, "503:codel 120,
// timeout 8", most frequent first, ties by name.
func TopErrors(errs map[string]int64, n int) string {
	type kv struct {
		k string
		v int64
	}
	var all []kv
	for k, v := range errs {
		all = append(all, kv{k, v})
	}
	slices.SortFunc(all, func(a, b kv) int {
		if c := cmp.Compare(b.v, a.v); c != 0 {
			return c
		}
		return strings.Compare(a.k, b.k)
	})
	var parts []string
	for i, e := range all {
		if i == n {
			parts = append(parts, "…")
			break
		}
		parts = append(parts, fmt.Sprintf("%s %d", e.k, e.v))
	}
	if len(parts) == 0 {
		return "–"
	}
	return strings.Join(parts, ", ")
}

// cores formats the CPU the renderers, the front and the load generator
// used during a run (and the drain after it), in cores: on a small machine
// what the front and the generator take, the renderers do not get.
func cores(r *RunResult) string {
	if r.CPU.Wall <= 0 {
		return "–"
	}
	w := r.CPU.Wall
	return fmt.Sprintf("%.2f / %.2f / %.2f", r.CPU.Renderers/w, r.CPU.Front/w, r.CPU.Generator/w)
}

// otherLoad formats the CPU the rest of the machine used during a run, in
// cores, flagged when the run was noisy on every attempt.
func otherLoad(r *RunResult) string {
	s := fmt.Sprintf("%.2f", r.OtherCores())
	if r.Noisy {
		s += " (noisy)"
	}
	return s
}

func wastedCell(r *RunResult) string {
	if r.Rendered < 0 {
		return "unknown"
	}
	share := 0.0
	if r.Rendered > 0 {
		share = float64(r.Wasted) / float64(r.Rendered)
	}
	ge := ""
	if r.DrainCapped {
		ge = "≥ "
	}
	return fmt.Sprintf("%s%d (%s)", ge, r.Wasted, pct(share))
}

// goodputShare is a run's goodput as a share of its setup's capacity.
func goodputShare(r *RunResult) float64 { return r.Reports[0].Total.Goodput / r.Capacity }

// medianBy returns the median of f over runs.
func medianBy(runs []*RunResult, f func(*RunResult) float64) float64 {
	var xs []float64
	for _, r := range runs {
		xs = append(xs, f(r))
	}
	return Median(xs)
}

// group returns the runs with the given setup, point and client mode.
func group(runs []*RunResult, setup, point string, ka bool) []*RunResult {
	var g []*RunResult
	for _, r := range runs {
		if r.Setup == setup && r.Point == point && r.KeepAlive == ka {
			g = append(g, r)
		}
	}
	return g
}

func setupsIn(runs []*RunResult) []string {
	var names []string
	for _, n := range KnownSetups() {
		for _, r := range runs {
			if r.Setup == n {
				names = append(names, n)
				break
			}
		}
	}
	return names
}

func kaTitle(ka bool) string {
	if ka {
		return "client keep-alive on"
	}
	return "client keep-alive off (a new connection per request)"
}

func (s *Suite) writeGoodput(runs []*RunResult) error {
	if err := s.writeJSON(ScenarioGoodput+".json", scenarioFile{Scenario: ScenarioGoodput, Environment: s.env, Runs: runs}); err != nil {
		return err
	}
	var md strings.Builder
	setups := setupsIn(runs)
	for _, ka := range s.o.KeepAlive {
		good := &chart.Chart{
			Title:    "Goodput vs offered load, " + kaTitle(ka),
			Subtitle: "?cpu=10 pages, client timeout 1 s; goodput and load as % of each setup's measured capacity",
			XLabel:   "offered load (multiple of capacity, log scale)", YLabel: "goodput (% of capacity)",
			LogX: true, Dots: true, XTicks: Multiples(),
			HLines: []chart.Mark{{Value: 100, Label: "capacity"}, {Value: 90, Label: "target: 90%"}},
		}
		lat := &chart.Chart{
			Title:    "p99 latency of successes, " + kaTitle(ka),
			Subtitle: "?cpu=10 pages, client timeout 1 s (no success can take longer)",
			XLabel:   "offered load (multiple of capacity, log scale)", YLabel: "p99 of successes (ms)",
			LogX: true, Dots: true, XTicks: Multiples(),
			HLines: []chart.Mark{{Value: 1000, Label: "client timeout"}},
		}
		gt := &Table{Header: []string{"setup"}}
		pt := &Table{Header: []string{"setup"}}
		wt := &Table{Header: []string{"setup"}}
		for _, m := range Multiples() {
			gt.Header = append(gt.Header, multipleName(m))
			pt.Header = append(pt.Header, multipleName(m))
			wt.Header = append(wt.Header, multipleName(m))
		}
		for _, setup := range setups {
			gs, ps, grow, prow, wrow := goodputRow(runs, setup, ka)
			good.Series, lat.Series = append(good.Series, gs), append(lat.Series, ps)
			gt.Add(grow...)
			pt.Add(prow...)
			wt.Add(wrow...)
		}
		if err := s.writeChart(fmt.Sprintf("goodput-%s.svg", kaName(ka)), good); err != nil {
			return err
		}
		if err := s.writeChart(fmt.Sprintf("p99-%s.svg", kaName(ka)), lat); err != nil {
			return err
		}
		fmt.Fprintf(&md, "### Goodput, %% of capacity, %s\n\n%s\n", kaTitle(ka), gt.Markdown())
		fmt.Fprintf(&md, "### p99 latency of successes, %s\n\n%s\n", kaTitle(ka), pt.Markdown())
		fmt.Fprintf(&md, "### Wasted renders (share of all renders), %s\n\n%s\n", kaTitle(ka), wt.Markdown())
	}
	md.WriteString("### Every run\n\n")
	md.WriteString(detailTable(runs).Markdown())
	if noise := noiseTable(runs); len(noise.Rows) > 0 {
		fmt.Fprintf(&md, "\n### Noise: the %s point, %s, each run\n\n%s", multipleName(RepeatMultiple), kaTitle(false), noise.Markdown())
	}
	return s.writeFile(ScenarioGoodput+".md", []byte(md.String()))
}

// goodputRow returns setup's figures at each of Multiples, in client
// mode ka: the series of its goodput and p99 for the charts, and the rows
// of the goodput, p99 and wasted-renders tables, "–" where it did not run.
func goodputRow(runs []*RunResult, setup string, ka bool) (gs, ps chart.Series, grow, prow, wrow []string) {
	gs, ps = chart.Series{Name: setup}, chart.Series{Name: setup}
	grow, prow, wrow = []string{setup}, []string{setup}, []string{setup}
	for _, m := range Multiples() {
		g := group(runs, setup, multipleName(m), ka)
		if len(g) == 0 {
			grow, prow, wrow = append(grow, "–"), append(prow, "–"), append(wrow, "–")
			continue
		}
		share := medianBy(g, goodputShare)
		p99 := medianBy(g, func(r *RunResult) float64 { return float64(r.Reports[0].Total.Latency.P99) })
		gs.X, gs.Y = append(gs.X, m), append(gs.Y, 100*share)
		y := p99 / float64(time.Millisecond)
		if p99 == 0 {
			y = math.NaN()
		}
		ps.X, ps.Y = append(ps.X, m), append(ps.Y, y)
		note := ""
		if len(g) > 1 {
			note = fmt.Sprintf(" (median of %d)", len(g))
		}
		grow = append(grow, pct(share)+note)
		prow = append(prow, fmtMS(time.Duration(p99)))
		wrow = append(wrow, wastedCell(g[0]))
	}
	return gs, ps, grow, prow, wrow
}

func detailTable(runs []*RunResult) *Table {
	t := &Table{Header: []string{"setup", "client", "load", "run", "offered/s", "goodput/s", "% of capacity", "success", "p50", "p99", "wasted renders", "drain", "cores: renderers / front / generator", "other load", "failures by kind"}}
	for _, r := range runs {
		tot := r.Reports[0].Total
		t.Add(r.Setup, kaName(r.KeepAlive), r.Point, fmt.Sprint(r.Repeat+1), fmtRate(tot.OfferedRate), fmtRate(tot.Goodput),
			pct(goodputShare(r)), pct(tot.SuccessRatio), fmtMS(tot.Latency.P50), fmtMS(tot.Latency.P99),
			wastedCell(r), fmtSecs(r.Drain, r.DrainCapped), cores(r), otherLoad(r),
			TopErrors(tot.Errors, 3))
	}
	return t
}

func noiseTable(runs []*RunResult) *Table {
	t := &Table{Header: []string{"setup", "goodput % of capacity, each run", "median", "p99, each run", "median"}}
	for _, setup := range setupsIn(runs) {
		g := group(runs, setup, multipleName(RepeatMultiple), false)
		if len(g) < 2 {
			continue
		}
		var gs, ps []string
		for _, r := range g {
			gs = append(gs, pct(goodputShare(r)))
			ps = append(ps, fmtMS(r.Reports[0].Total.Latency.P99))
		}
		t.Add(setup, strings.Join(gs, ", "), pct(medianBy(g, goodputShare)),
			strings.Join(ps, ", "), fmtMS(time.Duration(medianBy(g, func(r *RunResult) float64 { return float64(r.Reports[0].Total.Latency.P99) }))))
	}
	return t
}

// writeTimeline writes a scenario whose figure is goodput over time
// (capacity-drop, retry-storm): a chart per client mode with every setup,
// the loadgen chart of each run without keep-alive, and a table.
func (s *Suite) writeTimeline(scenario string, runs []*RunResult, marks ...time.Duration) error {
	if err := s.writeJSON(scenario+".json", scenarioFile{Scenario: scenario, Environment: s.env, Runs: runs}); err != nil {
		return err
	}
	for _, ka := range s.o.KeepAlive {
		if err := s.writeTimelineCharts(scenario, runs, ka, marks); err != nil {
			return err
		}
	}
	return s.writeFile(scenario+".md", []byte(timelineTable(scenario, runs).Markdown()))
}

// writeTimelineCharts draws the runs in client mode ka: every setup's
// goodput over time on one chart, with the marks (the moments the load
// changes) as vertical lines; and without keep-alive each run's loadgen
// chart.
func (s *Suite) writeTimelineCharts(scenario string, runs []*RunResult, ka bool, marks []time.Duration) error {
	c := &chart.Chart{
		Title:  fmt.Sprintf("%s: goodput over time, %s", scenario, kaTitle(ka)),
		XLabel: "time (s)", YLabel: "goodput (% of capacity at cpu=10)",
		Dots: true,
	}
	var at time.Duration
	for _, m := range marks {
		at += m
		c.VLines = append(c.VLines, chart.Mark{Value: at.Seconds(), Label: fmt.Sprintf("%gs", at.Seconds())})
	}
	switch scenario {
	case ScenarioDrop:
		c.Subtitle = "0.8x of capacity at ?cpu=10, then the same rate at ?cpu=20 (the capacity halves)"
	case ScenarioRetry:
		c.Subtitle = "immediate retries (3 attempts); 0.8x, a 1.5x trigger, 0.8x; 1 s client timeout"
		c.HLines = []chart.Mark{{Value: 80, Label: "offered after the trigger"}, {Value: 72, Label: "90% of it"}}
	}
	for _, r := range runs {
		if r.KeepAlive != ka {
			continue
		}
		if scenario == ScenarioDrop && len(c.HLines) == 0 && r.Recovery != nil {
			nc := 100 * r.Recovery.Threshold / 0.9 / r.Capacity
			c.HLines = []chart.Mark{{Value: nc, Label: "new capacity"}, {Value: 0.9 * nc, Label: "90% of it"}}
		}
		sr := chart.Series{Name: r.Setup}
		bucket := r.Reports[0].Bucket
		for _, p := range r.AllSeries() {
			sr.X = append(sr.X, (p.Start + bucket/2).Seconds())
			sr.Y = append(sr.Y, 100*p.Goodput/r.Capacity)
		}
		c.Series = append(c.Series, sr)
		if !ka {
			var b bytes.Buffer
			if err := chartReport(scenario, r).WriteSVG(&b); err != nil {
				return err
			}
			if err := s.writeFile(fmt.Sprintf("%s-%s-%s.svg", scenario, r.Setup, kaName(ka)), b.Bytes()); err != nil {
				return err
			}
		}
	}
	return s.writeChart(fmt.Sprintf("%s-%s.svg", scenario, kaName(ka)), c)
}

// timelineTable is a timeline scenario's table: each run's goodput per
// phase, its recovery, retry amplification and failures.
func timelineTable(scenario string, runs []*RunResult) *Table {
	t := &Table{Header: []string{"setup", "client"}}
	phaseNames := timelinePhases(scenario, runs)
	for _, n := range phaseNames {
		t.Header = append(t.Header, n+": goodput/s (success)")
	}
	t.Header = append(t.Header, "recovered after", "attempts per request", "wasted renders", "drain", "other load", "failures by kind")
	for _, r := range runs {
		row := []string{r.Setup, kaName(r.KeepAlive)}
		var requests, attempts int64
		errs := map[string]int64{}
		for _, ps := range timelineStats(scenario, r) {
			row = append(row, fmt.Sprintf("%s (%s)", fmtRate(ps.Goodput), pct(ps.SuccessRatio)))
		}
		for _, rep := range r.Reports {
			requests += rep.Total.Requests
			attempts += rep.Total.Attempts
			for k, v := range rep.Total.Errors {
				errs[k] += v
			}
		}
		rec := "not within the run"
		if r.Recovery != nil && r.Recovery.Recovered {
			rec = fmt.Sprintf("%.2f s", r.Recovery.After.Seconds())
		}
		amp := "–"
		if requests > 0 {
			amp = fmt.Sprintf("%.2f", float64(attempts)/float64(requests))
		}
		row = append(row, rec, amp, wastedCell(r), fmtSecs(r.Drain, r.DrainCapped), otherLoad(r), TopErrors(errs, 3))
		t.Add(row...)
	}
	return t
}

// timelinePhases names the phases of a timeline scenario's table.
func timelinePhases(scenario string, runs []*RunResult) []string {
	if len(runs) == 0 {
		return nil
	}
	if scenario == ScenarioDrop {
		return []string{"cpu=10", "cpu=20"}
	}
	var names []string
	for _, p := range runs[0].Reports[0].Phases {
		names = append(names, p.Name)
	}
	return names
}

// timelineStats returns a run's per-phase stats; for capacity-drop, the
// active phase of each stream.
func timelineStats(scenario string, r *RunResult) []loadgen.Stats {
	if scenario == ScenarioDrop && len(r.Reports) == 2 {
		return []loadgen.Stats{r.Reports[0].Phases[0].Stats, r.Reports[1].Phases[1].Stats}
	}
	var out []loadgen.Stats
	for _, p := range r.Reports[0].Phases {
		out = append(out, p.Stats)
	}
	return out
}

// chartReport returns a report to draw with loadgen's WriteSVG: the run's
// own, or for several streams one whose series and phases are theirs
// together.
func chartReport(scenario string, r *RunResult) *loadgen.Report {
	base := *r.Reports[0]
	base.URL = fmt.Sprintf("%s, %s, %s", scenario, r.Setup, kaTitle(r.KeepAlive))
	if len(r.Reports) == 1 {
		return &base
	}
	base.Series = r.AllSeries()
	base.Phases = nil
	var tot loadgen.Stats
	for i, rep := range r.Reports {
		// Stream i is active in its phase i.
		if i < len(rep.Phases) {
			base.Phases = append(base.Phases, rep.Phases[i])
		}
		tot.Requests += rep.Total.Requests
		tot.Successes += rep.Total.Successes
		tot.Duration = max(tot.Duration, rep.Total.Duration)
		tot.Latency.P99 = max(tot.Latency.P99, rep.Total.Latency.P99)
	}
	if secs := tot.Duration.Seconds(); secs > 0 {
		tot.OfferedRate = float64(tot.Requests) / secs
		tot.Goodput = float64(tot.Successes) / secs
	}
	if tot.Requests > 0 {
		tot.SuccessRatio = float64(tot.Successes) / float64(tot.Requests)
	}
	base.Total = tot
	return &base
}

// writeClasses writes a scenario whose figure is per class (tenants,
// hetero).
func (s *Suite) writeClasses(scenario string, runs []*RunResult) error {
	if err := s.writeJSON(scenario+".json", scenarioFile{Scenario: scenario, Environment: s.env, Runs: runs}); err != nil {
		return err
	}
	t := &Table{Header: []string{"mix", "setup", "client", "class", "offered/s", "goodput/s", "success", "p50", "p99", "failures by kind", "other load"}}
	for _, r := range runs {
		rep := r.Reports[0]
		for _, c := range rep.Classes {
			t.Add(r.Point, r.Setup, kaName(r.KeepAlive), c.Name, fmtRate(c.Stats.OfferedRate), fmtRate(c.Stats.Goodput),
				pct(c.Stats.SuccessRatio), fmtMS(c.Stats.Latency.P50), fmtMS(c.Stats.Latency.P99), TopErrors(c.Stats.Errors, 3), "")
		}
		t.Add(r.Point, r.Setup, kaName(r.KeepAlive), "**all**", fmtRate(rep.Total.OfferedRate), fmtRate(rep.Total.Goodput),
			pct(rep.Total.SuccessRatio), fmtMS(rep.Total.Latency.P50), fmtMS(rep.Total.Latency.P99), TopErrors(rep.Total.Errors, 3), otherLoad(r))
	}
	return s.writeFile(scenario+".md", []byte(t.Markdown()))
}

func (s *Suite) writeHop(out []HopResult) error {
	if err := s.writeJSON(ScenarioHop+".json", scenarioFile{Scenario: ScenarioHop, Environment: s.env, Hop: out}); err != nil {
		return err
	}
	t := &Table{Header: []string{"setup", "client", "median responses/s", "each run", "mean latency, each run", "errors"}}
	for _, h := range out {
		var rs, ls []string
		for i := range h.Rates {
			rs = append(rs, fmtRate(h.Rates[i]))
			ls = append(ls, fmt.Sprintf("%.2f ms", h.MeanLat[i]))
		}
		t.Add(h.Setup, kaName(h.KeepAlive), fmtRate(h.Median), strings.Join(rs, ", "), strings.Join(ls, ", "), fmt.Sprint(h.Errors))
	}
	return s.writeFile(ScenarioHop+".md", []byte(t.Markdown()))
}
