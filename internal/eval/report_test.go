package eval

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

func TestTableMarkdown(t *testing.T) {
	tb := &Table{Header: []string{"setup", "goodput"}}
	tb.Add("sluice", "95%")
	tb.Add("round-robin", "5%")
	want := "| setup | goodput |\n|---|---:|\n| sluice | 95% |\n| round-robin | 5% |\n"
	if got := tb.Markdown(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestTopErrors(t *testing.T) {
	tests := []struct {
		name string
		errs map[string]int64
		n    int
		want string
	}{
		{"none", nil, 3, "–"},
		{"most frequent first", map[string]int64{"timeout": 5, "503:codel": 120, "conn-error": 1}, 3, "503:codel 120, timeout 5, conn-error 1"},
		{"ties by name", map[string]int64{"b": 2, "a": 2}, 3, "a 2, b 2"},
		{"the rest elided", map[string]int64{"a": 3, "b": 2, "c": 1}, 2, "a 3, b 2, …"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TopErrors(tt.errs, tt.n); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWastedCell(t *testing.T) {
	tests := []struct {
		name string
		r    RunResult
		want string
	}{
		{"share of renders", RunResult{Rendered: 200, Wasted: 50}, "50 (25%)"},
		{"a lower bound when the drain was cut", RunResult{Rendered: 200, Wasted: 50, DrainCapped: true}, "≥ 50 (25%)"},
		{"unknown", RunResult{Rendered: -1, Wasted: -1}, "unknown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wastedCell(&tt.r); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// fakeRun is a goodput-scenario run with the figures the writers read.
func fakeRun(setup, point string, multiple float64, ka bool, goodput float64) *RunResult {
	rep := &loadgen.Report{
		Bucket: 250 * time.Millisecond,
		Total:  loadgen.Stats{OfferedRate: 100 * multiple, Goodput: goodput, SuccessRatio: goodput / (100 * multiple), Latency: loadgen.Latency{P50: 10 * time.Millisecond, P99: 40 * time.Millisecond}},
		Phases: []loadgen.PhaseReport{{Name: point, Phase: loadgen.Phase{Name: point, Rate: 100 * multiple, Duration: 10 * time.Second}}},
		Series: []loadgen.Point{{Start: 0, Goodput: goodput}, {Start: 250 * time.Millisecond, Goodput: goodput}},
	}
	return &RunResult{Scenario: ScenarioGoodput, Setup: setup, Point: point, Multiple: multiple, KeepAlive: ka, Capacity: 100,
		Reports: []*loadgen.Report{rep}, Series: rep.Series, Rendered: 1000, Wasted: 10, CPU: CPUUse{Renderers: 15, Front: 1, Generator: 2, Wall: 10}}
}

func TestRewriteRegeneratesTablesAndCharts(t *testing.T) {
	dir := t.TempDir()
	var runs []*RunResult
	for _, m := range Multiples() {
		runs = append(runs, fakeRun(SetupSluice, multipleName(m), m, false, 90), fakeRun(SetupRoundRobin, multipleName(m), m, false, 10))
	}
	files := map[string]scenarioFile{
		ScenarioGoodput + ".json": {Scenario: ScenarioGoodput, Runs: runs},
		ScenarioHop + ".json":     {Scenario: ScenarioHop, Hop: []HopResult{{Setup: SetupSluice, Rates: []float64{900, 1000, 1100}, MeanLat: []float64{1, 1, 1}, Median: 1000}}},
	}
	for name, f := range files {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := Rewrite(dir); err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(filepath.Join(dir, ScenarioGoodput+".md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| sluice | 90% | 90% | 90% | 90% | 90% |", "| round-robin |", "1.50 / 0.10 / 0.20"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("goodput.md lacks %q:\n%s", want, md)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "goodput-newconn.svg")); err != nil {
		t.Errorf("no goodput chart: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "goodput-keepalive.svg")); err == nil {
		t.Error("got a keep-alive chart for runs without keep-alive, want none")
	}
	hop, err := os.ReadFile(filepath.Join(dir, ScenarioHop+".md"))
	if err != nil || !strings.Contains(string(hop), "| sluice | newconn | 1000 | 900, 1000, 1100 |") {
		t.Errorf("hop.md: got %q, %v", hop, err)
	}
}
