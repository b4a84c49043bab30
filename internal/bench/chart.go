package bench

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Chart is a line chart of several series that share both axes: goodput
// against offered load for each setup, or goodput over time for each
// setup. It renders as a self-contained SVG (WriteSVG). The zero value is
// an empty chart.
type Chart struct {
	Title    string
	Subtitle string
	XLabel   string
	YLabel   string
	// LogX spaces the x axis by log2, for load multiples 0.5, 1, 2, 4, 8;
	// every x must then be positive. XTicks, when set, are the only x
	// labels drawn.
	LogX   bool
	XTicks []float64
	Series []Series
	// HLines are horizontal reference lines (capacity, a target).
	HLines []Mark
	// VLines are vertical reference lines (phase boundaries).
	VLines []Mark
}

// Series is one line. X and Y have the same length; a NaN Y leaves a gap.
type Series struct {
	Name string
	X, Y []float64
	Dash bool
}

// Mark is a labelled reference line at Value.
type Mark struct {
	Value float64
	Label string
}

// Chart geometry, in SVG user units.
const (
	chartW      = 960
	chartH      = 520
	chartLeft   = 80
	chartRight  = chartW - 200 // the legend lives on the right
	chartTop    = 70
	chartBottom = chartH - 60
)

// seriesColor returns series i's colour from a colour-blind friendly
// palette (Okabe-Ito).
func seriesColor(i int) string {
	p := [...]string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}
	return p[i%len(p)]
}

// WriteSVG draws the chart. Each series is a <path> with a data-series
// attribute naming it, each point a <circle>.
func (c *Chart) WriteSVG(w io.Writer) error {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymax := 0.0
	for _, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("bench: chart series %q: %d x values, %d y values", s.Name, len(s.X), len(s.Y))
		}
		for i, x := range s.X {
			if c.LogX && x <= 0 {
				return fmt.Errorf("bench: chart series %q: x %v on a log axis", s.Name, x)
			}
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			if y := s.Y[i]; !math.IsNaN(y) {
				ymax = math.Max(ymax, y)
			}
		}
	}
	for _, m := range c.HLines {
		ymax = math.Max(ymax, m.Value)
	}
	for _, t := range c.XTicks {
		xmin, xmax = math.Min(xmin, t), math.Max(xmax, t)
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	fx := func(x float64) float64 { return x }
	if c.LogX {
		fx = math.Log2
	}
	lo, hi := fx(xmin), fx(xmax)
	if hi == lo {
		hi = lo + 1
	}
	ytop, ystep := axisScale(ymax)
	px := func(x float64) float64 { return chartLeft + (chartRight-chartLeft)*(fx(x)-lo)/(hi-lo) }
	py := func(y float64) float64 { return chartBottom - (chartBottom-chartTop)*y/ytop }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", chartW, chartH)
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="16" font-weight="600" fill="#111827">%s</text>`+"\n", chartLeft, xmlEsc(c.Title))
	fmt.Fprintf(&b, `<text x="%d" y="44" fill="#4b5563">%s</text>`+"\n", chartLeft, xmlEsc(c.Subtitle))

	// Grid, y ticks.
	b.WriteString(`<g stroke="#e5e7eb" stroke-width="1">` + "\n")
	for v := ystep; v <= ytop+ystep/2; v += ystep {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", chartLeft, py(v), chartRight, py(v))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g fill="#374151">` + "\n")
	for v := 0.0; v <= ytop+ystep/2; v += ystep {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", chartLeft-8, py(v), fmtTick(v))
	}
	xticks := c.XTicks
	if len(xticks) == 0 {
		xticks = linearTicks(xmin, xmax)
	}
	for _, t := range xticks {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(t), chartBottom+18, fmtTick(t))
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<path d="M%d %d V%d H%d" fill="none" stroke="#9ca3af" stroke-width="1"/>`+"\n", chartLeft, chartTop, chartBottom, chartRight)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="#111827">%s</text>`+"\n", (chartLeft+chartRight)/2, chartBottom+42, xmlEsc(c.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(22 %d) rotate(-90)" text-anchor="middle" fill="#111827">%s</text>`+"\n", (chartTop+chartBottom)/2, xmlEsc(c.YLabel))

	// Reference lines.
	b.WriteString(`<g class="marks" fill="#6b7280" font-size="11">` + "\n")
	for _, m := range c.HLines {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#6b7280" stroke-dasharray="6 4"/>`+"\n", chartLeft, py(m.Value), chartRight, py(m.Value))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", chartRight-4, py(m.Value)-4, xmlEsc(m.Label))
	}
	for _, m := range c.VLines {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#9ca3af" stroke-dasharray="3 3"/>`+"\n", px(m.Value), chartTop, px(m.Value), chartBottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d">%s</text>`+"\n", px(m.Value)+4, chartTop+12, xmlEsc(m.Label))
	}
	b.WriteString("</g>\n")

	// Series and legend.
	for i, s := range c.Series {
		color := seriesColor(i)
		var d strings.Builder
		move := true
		for j, x := range s.X {
			y := s.Y[j]
			if math.IsNaN(y) {
				move = true
				continue
			}
			cmd := "L"
			if move {
				cmd, move = "M", false
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, px(x), py(y))
		}
		dash := ""
		if s.Dash {
			dash = ` stroke-dasharray="6 3"`
		}
		fmt.Fprintf(&b, `<path data-series="%s" d="%s" fill="none" stroke="%s" stroke-width="2" stroke-linejoin="round"%s/>`+"\n", xmlEsc(s.Name), strings.TrimSpace(d.String()), color, dash)
		if len(s.X) <= 20 {
			for j, x := range s.X {
				if y := s.Y[j]; !math.IsNaN(y) {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(x), py(y), color)
				}
			}
		}
		ly := chartTop + 8 + 20*i
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`+"\n", chartRight+16, ly, chartRight+40, ly, color, dash)
		fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#111827">%s</text>`+"\n", chartRight+46, ly+4, xmlEsc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// axisScale returns an axis top at or above v and a tick step on the
// 1-2-5 ladder, for about five ticks.
func axisScale(v float64) (top, step float64) {
	if v <= 0 || math.IsNaN(v) {
		return 1, 0.2
	}
	raw := v / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	switch f := raw / mag; {
	case f <= 1:
		step = mag
	case f <= 2:
		step = 2 * mag
	case f <= 5:
		step = 5 * mag
	default:
		step = 10 * mag
	}
	return math.Ceil(v/step) * step, step
}

func linearTicks(lo, hi float64) []float64 {
	_, step := axisScale(hi - lo)
	var ts []float64
	for t := math.Floor(lo/step) * step; t <= hi+step/1000; t += step {
		if t >= lo-step/1000 {
			ts = append(ts, t)
		}
	}
	return ts
}

func fmtTick(v float64) string {
	if math.Abs(v-math.Round(v)) < 1e-9 {
		return strconv.FormatInt(int64(math.Round(v)), 10)
	}
	// Steps like 0.1 accumulate error (0.30000000000000004).
	return strconv.FormatFloat(math.Round(v*1e6)/1e6, 'f', -1, 64)
}

func xmlEsc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
