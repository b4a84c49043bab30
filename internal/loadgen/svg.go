package loadgen

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/sluicehq/sluice/internal/chart"
)

// WriteSVG draws r.Series as a self-contained SVG chart: offered load,
// attempts (when retrying), goodput and errors in requests per second on
// the left axis, p99 latency of successes on the right axis, time along
// the bottom, and the phase boundaries marked and named. Each line is a
// <path> carrying a data-series attribute ("offered", "attempts",
// "goodput", "errors", "p99").
func (r *Report) WriteSVG(w io.Writer) error {
	end := r.Total.Duration
	if n := len(r.Series); n > 0 {
		end = max(end, r.Series[n-1].Start+r.Bucket)
	}
	if end <= 0 {
		end = time.Second
	}
	c := &chart.Chart{
		Title:    "sluice bench: " + r.URL,
		Subtitle: chartSubtitle(r),
		XLabel:   "time (s)", YLabel: "requests per second", Y2Label: "p99 latency of successes (ms)",
		XMax: end.Seconds(), XTickCount: 10,
		Legend: chart.LegendTop,
	}
	for i, p := range r.Phases {
		c.VLines = append(c.VLines, chart.Mark{Value: p.Start.Seconds(), Label: fmt.Sprintf("%d: %s", i+1, p.Name)})
	}
	for _, l := range r.chartLines() {
		s := l.Series
		for _, p := range r.Series {
			// Each point at its bucket's middle.
			s.X = append(s.X, (p.Start + r.Bucket/2).Seconds())
			s.Y = append(s.Y, l.value(p))
		}
		c.Series = append(c.Series, s)
	}
	return c.WriteSVG(w)
}

// chartLine is a series of the chart and how each point gives its value.
type chartLine struct {
	chart.Series
	value func(Point) float64 // NaN: none (no success, so no latency)
}

// chartLines returns the chart's lines in the legend's order: attempts
// only when the run retried.
func (r *Report) chartLines() []chartLine {
	lines := []chartLine{
		{chart.Series{Name: "offered", Color: "#6b7280", Dash: "6 4", Width: "2.0"},
			func(p Point) float64 { return p.Offered }},
		{chart.Series{Name: "goodput", Color: "#16a34a", Width: "2.5"},
			func(p Point) float64 { return p.Goodput }},
		{chart.Series{Name: "errors", Color: "#dc2626", Width: "1.5"},
			func(p Point) float64 { return p.Errors }},
		{chart.Series{Name: "p99", Label: "p99 latency (right axis)", Color: "#2563eb", Width: "2.0", Right: true},
			func(p Point) float64 {
				if p.P99 <= 0 {
					return math.NaN()
				}
				return ms(p.P99)
			}},
	}
	if r.Settings.Retry != RetryNone.String() {
		attempts := chartLine{chart.Series{Name: "attempts", Label: "attempts (retries included)", Color: "#7c3aed", Dash: "2 3", Width: "1.5"},
			func(p Point) float64 { return p.Attempts }}
		lines = append(lines[:1], append([]chartLine{attempts}, lines[1:]...)...)
	}
	return lines
}

func chartSubtitle(r *Report) string {
	s := r.Settings
	keep := "keep-alive"
	if !s.KeepAlive {
		keep = "new connection per request"
	}
	t := r.Total
	return fmt.Sprintf("goodput %s/s of %s/s offered (%.1f%%), p99 %s · timeout %v, %s, retry %s",
		formatCount(t.Goodput), formatCount(t.OfferedRate), 100*t.SuccessRatio,
		formatLatency(t.Latency.P99), s.Timeout, keep, s.Retry)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
