package bench

import (
	"strconv"
	"testing"
)

func parseFloat(s string) (float64, error) { return strconv.ParseFloat(s, 64) }

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
