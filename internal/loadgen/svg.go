package loadgen

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Chart geometry, in SVG user units.
const (
	svgWidth   = 960
	svgHeight  = 500
	plotLeft   = 80
	plotRight  = svgWidth - 90
	plotTop    = 90
	plotBottom = svgHeight - 60
)

// chartSeries is one line on the chart.
type chartSeries struct {
	name, label, color, dash string
	width                    float64
	right                    bool // on the latency axis
	value                    func(Point) (float64, bool)
}

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
	series := []chartSeries{
		{name: "offered", label: "offered", color: "#6b7280", dash: "6 4", width: 2,
			value: func(p Point) (float64, bool) { return p.Offered, true }},
		{name: "goodput", label: "goodput", color: "#16a34a", width: 2.5,
			value: func(p Point) (float64, bool) { return p.Goodput, true }},
		{name: "errors", label: "errors", color: "#dc2626", width: 1.5,
			value: func(p Point) (float64, bool) { return p.Errors, true }},
		{name: "p99", label: "p99 latency (right axis)", color: "#2563eb", width: 2, right: true,
			value: func(p Point) (float64, bool) { return ms(p.P99), p.P99 > 0 }},
	}
	if r.Settings.Retry != RetryNone.String() {
		attempts := chartSeries{name: "attempts", label: "attempts (retries included)", color: "#7c3aed", dash: "2 3", width: 1.5,
			value: func(p Point) (float64, bool) { return p.Attempts, true }}
		series = append(series[:1], append([]chartSeries{attempts}, series[1:]...)...)
	}

	var leftMax, rightMax float64
	for _, p := range r.Series {
		for _, s := range series {
			if v, ok := s.value(p); ok && s.right {
				rightMax = max(rightMax, v)
			} else if ok {
				leftMax = max(leftMax, v)
			}
		}
	}
	leftTop, leftStep := niceScale(leftMax)
	rightTop, rightStep := niceScale(rightMax)
	timeTop, timeStep := end.Seconds(), niceStep(end.Seconds()/10)

	x := func(t float64) float64 { return plotLeft + (plotRight-plotLeft)*t/timeTop }
	yl := func(v float64) float64 { return plotBottom - (plotBottom-plotTop)*v/leftTop }
	yr := func(v float64) float64 { return plotBottom - (plotBottom-plotTop)*v/rightTop }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		svgWidth, svgHeight, svgWidth, svgHeight)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, svgHeight)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="600" fill="#111827">sluice bench: %s</text>`+"\n", plotLeft, esc(r.URL))
	fmt.Fprintf(&b, `<text x="%d" y="42" fill="#4b5563">%s</text>`+"\n", plotLeft, esc(chartSubtitle(r)))

	// Grid and axes.
	b.WriteString(`<g stroke="#e5e7eb" stroke-width="1">` + "\n")
	for v := leftStep; v <= leftTop+leftStep/2; v += leftStep {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", plotLeft, yl(v), plotRight, yl(v))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g fill="#374151">` + "\n")
	for v := 0.0; v <= leftTop+leftStep/2; v += leftStep {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", plotLeft-8, yl(v), tickLabel(v, leftStep))
	}
	for v := 0.0; v <= rightTop+rightStep/2; v += rightStep {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", plotRight+8, yr(v), tickLabel(v, rightStep))
	}
	for t := 0.0; t <= timeTop+timeStep/1000; t += timeStep {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(t), plotBottom+18, tickLabel(t, timeStep))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<path d="M%d %d V%d H%d V%d" fill="none" stroke="#9ca3af" stroke-width="1"/>`+"\n",
		plotLeft, plotTop, plotBottom, plotRight, plotTop)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#111827">time (s)</text>`+"\n", (plotLeft+plotRight)/2, plotBottom+42)
	fmt.Fprintf(&b, `<text transform="translate(22 %d) rotate(-90)" text-anchor="middle" fill="#111827">requests per second</text>`+"\n", (plotTop+plotBottom)/2)
	fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="#111827">p99 latency of successes (ms)</text>`+"\n", svgWidth-22, (plotTop+plotBottom)/2)

	// Phase boundaries and names.
	b.WriteString(`<g class="phases" fill="#6b7280" font-size="11">` + "\n")
	for i, p := range r.Phases {
		px := x(p.Start.Seconds())
		if i > 0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#9ca3af" stroke-dasharray="3 3"/>`+"\n", px, plotTop, px, plotBottom)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", px+4, plotTop+14, esc(fmt.Sprintf("%d: %s", i+1, p.Name)))
	}
	b.WriteString("</g>\n")

	// The series, each point at its bucket's middle; a gap where a value
	// is undefined (no success, so no latency).
	for _, s := range series {
		y := yl
		if s.right {
			y = yr
		}
		var d strings.Builder
		move := true
		for _, p := range r.Series {
			v, ok := s.value(p)
			if !ok {
				move = true
				continue
			}
			cmd := "L"
			if move {
				cmd, move = "M", false
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, x((p.Start + r.Bucket/2).Seconds()), y(v))
		}
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		fmt.Fprintf(&b, `<path data-series="%s" d="%s" fill="none" stroke="%s" stroke-width="%.1f" stroke-linejoin="round"%s/>`+"\n",
			s.name, strings.TrimSpace(d.String()), s.color, s.width, dash)
	}

	// Legend, one entry per series, above the plot.
	lx := float64(plotLeft)
	for _, s := range series {
		dash := ""
		if s.dash != "" {
			dash = fmt.Sprintf(` stroke-dasharray="%s"`, s.dash)
		}
		fmt.Fprintf(&b, `<line x1="%.1f" y1="64" x2="%.1f" y2="64" stroke="%s" stroke-width="%.1f"%s/>`+"\n", lx, lx+24, s.color, s.width, dash)
		fmt.Fprintf(&b, `<text x="%.1f" y="68" fill="#111827">%s</text>`+"\n", lx+30, esc(s.label))
		lx += 30 + 7*float64(len(s.label)) + 24
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
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

// niceScale returns an axis top at or above v and a tick step, both on the
// 1-2-5 ladder, for about five ticks.
func niceScale(v float64) (top, step float64) {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1, 0.2
	}
	step = niceStep(v / 5)
	return math.Ceil(v/step) * step, step
}

// niceStep rounds v up to 1, 2 or 5 times a power of ten.
func niceStep(v float64) float64 {
	if v <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(v)))
	switch n := v / mag; {
	case n <= 1:
		return mag
	case n <= 2:
		return 2 * mag
	case n <= 5:
		return 5 * mag
	default:
		return 10 * mag
	}
}

// tickLabel prints v with as many decimals as step needs.
func tickLabel(v, step float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(step))))
	return strconv.FormatFloat(v, 'f', decimals, 64)
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s)) // a strings.Builder does not fail
	return b.String()
}
