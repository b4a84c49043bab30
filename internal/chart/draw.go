package chart

import (
	"cmp"
	"fmt"
	"math"
	"strings"
)

// plot is a chart's scales: where an x or y value falls on the page.
type plot struct {
	layout
	fx            func(float64) float64 // the x axis's spacing: identity, or log2
	lo, hi        float64               // the x axis's ends, after fx
	xticks        []float64
	xstep         float64 // the x ticks' step; 0 for ticks the caller chose
	ytop, ystep   float64
	hasY2         bool // a second y axis, on the right
	y2top, y2step float64
}

func (c *Chart) plot() *plot {
	p := &plot{layout: c.Legend.layout(), fx: func(x float64) float64 { return x }}
	if c.LogX {
		p.fx = math.Log2
	}
	xmin, xmax := c.xRange()
	p.lo, p.hi = p.fx(xmin), p.fx(xmax)
	if p.hi == p.lo {
		p.hi = p.lo + 1
	}
	p.xticks = c.XTicks
	if len(p.xticks) == 0 {
		p.xticks, p.xstep = linearTicks(xmin, xmax, cmp.Or(c.XTickCount, 5))
	}
	var ymax, y2max float64
	for _, s := range c.Series {
		p.hasY2 = p.hasY2 || s.Right
		for _, y := range s.Y {
			switch {
			case math.IsNaN(y):
			case s.Right:
				y2max = max(y2max, y)
			default:
				ymax = max(ymax, y)
			}
		}
	}
	for _, m := range c.HLines {
		ymax = max(ymax, m.Value)
	}
	p.ytop, p.ystep = niceScale(ymax)
	p.y2top, p.y2step = niceScale(y2max)
	return p
}

// xRange returns the x axis's ends before any log spacing.
func (c *Chart) xRange() (lo, hi float64) {
	if c.XMax > c.XMin {
		return c.XMin, c.XMax
	}
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, x := range s.X {
			lo, hi = min(lo, x), max(hi, x)
		}
	}
	for _, t := range c.XTicks {
		lo, hi = min(lo, t), max(hi, t)
	}
	if math.IsInf(lo, 0) {
		return 0, 1
	}
	if hi == lo {
		hi = lo + 1
	}
	return lo, hi
}

func (p *plot) x(x float64) float64 {
	return float64(p.left) + float64(p.right-p.left)*(p.fx(x)-p.lo)/(p.hi-p.lo)
}

func (p *plot) y(v float64) float64 {
	return float64(p.bottom) - float64(p.bottom-p.top)*v/p.ytop
}

func (p *plot) y2(v float64) float64 {
	return float64(p.bottom) - float64(p.bottom-p.top)*v/p.y2top
}

// writeFrame opens the SVG and draws the titles, the grid, the axes and
// their labels.
func (p *plot) writeFrame(b *strings.Builder, c *Chart) {
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif" font-size="12">`+"\n", width, p.height, width, p.height)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`+"\n", width, p.height)
	fmt.Fprintf(b, `<text x="%d" y="24" font-size="16" font-weight="600" fill="#111827">%s</text>`+"\n", p.left, esc(c.Title))
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#4b5563">%s</text>`+"\n", p.left, p.subtitleY, esc(c.Subtitle))

	b.WriteString(`<g stroke="#e5e7eb" stroke-width="1">` + "\n")
	for v := p.ystep; v <= p.ytop+p.ystep/2; v += p.ystep {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f"/>`+"\n", p.left, p.y(v), p.right, p.y(v))
	}
	b.WriteString("</g>\n")
	b.WriteString(`<g fill="#374151">` + "\n")
	for v := 0.0; v <= p.ytop+p.ystep/2; v += p.ystep {
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n", p.left-8, p.y(v), tickLabel(v, p.ystep))
	}
	if p.hasY2 {
		for v := 0.0; v <= p.y2top+p.y2step/2; v += p.y2step {
			fmt.Fprintf(b, `<text x="%d" y="%.1f" dominant-baseline="middle">%s</text>`+"\n", p.right+8, p.y2(v), tickLabel(v, p.y2step))
		}
	}
	for _, t := range p.xticks {
		label := fmtTick(t)
		if p.xstep > 0 {
			label = tickLabel(t, p.xstep)
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", p.x(t), p.bottom+18, label)
	}
	b.WriteString("</g>\n")

	if p.hasY2 {
		fmt.Fprintf(b, `<path d="M%d %d V%d H%d V%d" fill="none" stroke="#9ca3af" stroke-width="1"/>`+"\n", p.left, p.top, p.bottom, p.right, p.top)
	} else {
		fmt.Fprintf(b, `<path d="M%d %d V%d H%d" fill="none" stroke="#9ca3af" stroke-width="1"/>`+"\n", p.left, p.top, p.bottom, p.right)
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle" fill="#111827">%s</text>`+"\n", (p.left+p.right)/2, p.bottom+42, esc(c.XLabel))
	fmt.Fprintf(b, `<text transform="translate(22 %d) rotate(-90)" text-anchor="middle" fill="#111827">%s</text>`+"\n", (p.top+p.bottom)/2, esc(c.YLabel))
	if p.hasY2 {
		fmt.Fprintf(b, `<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="#111827">%s</text>`+"\n", width-22, (p.top+p.bottom)/2, esc(c.Y2Label))
	}
}

// writeMarks draws the reference lines and their labels.
func (p *plot) writeMarks(b *strings.Builder, c *Chart) {
	fmt.Fprintf(b, `<g class="%s" fill="#6b7280" font-size="11">`+"\n", p.marksClass)
	for _, m := range c.HLines {
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#6b7280" stroke-dasharray="6 4"/>`+"\n", p.left, p.y(m.Value), p.right, p.y(m.Value))
		fmt.Fprintf(b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", p.right-4, p.y(m.Value)-4, esc(m.Label))
	}
	for _, m := range c.VLines {
		if p.fx(m.Value) > p.lo {
			fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#9ca3af" stroke-dasharray="3 3"/>`+"\n", p.x(m.Value), p.top, p.x(m.Value), p.bottom)
		}
		fmt.Fprintf(b, `<text x="%.1f" y="%d">%s</text>`+"\n", p.x(m.Value)+4, p.top+p.markLabelDY, esc(m.Label))
	}
	b.WriteString("</g>\n")
}

// writeSeries draws series i's line, broken where Y is NaN, and with dots
// its points when they are few.
func (p *plot) writeSeries(b *strings.Builder, i int, s Series, dots bool) {
	y := p.y
	if s.Right {
		y = p.y2
	}
	var d strings.Builder
	move := true
	for j, x := range s.X {
		if math.IsNaN(s.Y[j]) {
			move = true
			continue
		}
		cmd := "L"
		if move {
			cmd, move = "M", false
		}
		fmt.Fprintf(&d, "%s%.1f %.1f ", cmd, p.x(x), y(s.Y[j]))
	}
	fmt.Fprintf(b, `<path data-series="%s" d="%s" fill="none" stroke="%s" stroke-width="%s" stroke-linejoin="round"%s/>`+"\n",
		esc(s.Name), strings.TrimSpace(d.String()), s.color(i), s.width(), s.dashAttr())
	if !dots || len(s.X) > dotsMax {
		return
	}
	for j, x := range s.X {
		if !math.IsNaN(s.Y[j]) {
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", p.x(x), y(s.Y[j]), s.color(i))
		}
	}
}

// writeRightEntry draws series i's entry of a legend right of the plot.
func (p *plot) writeRightEntry(b *strings.Builder, i int, s Series) {
	ly := p.top + 8 + 20*i
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="%s"%s/>`+"\n", p.right+16, ly, p.right+40, ly, s.color(i), s.width(), s.dashAttr())
	fmt.Fprintf(b, `<text x="%d" y="%d" fill="#111827">%s</text>`+"\n", p.right+46, ly+4, esc(s.label()))
}

// writeTopLegend draws the legend as a row above the plot.
func (p *plot) writeTopLegend(b *strings.Builder, series []Series) {
	lx := float64(p.left)
	ly := p.top - 26
	for i, s := range series {
		fmt.Fprintf(b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="%s" stroke-width="%s"%s/>`+"\n", lx, ly, lx+24, ly, s.color(i), s.width(), s.dashAttr())
		fmt.Fprintf(b, `<text x="%.1f" y="%d" fill="#111827">%s</text>`+"\n", lx+30, ly+4, esc(s.label()))
		// About 7 units a character of the 12-unit font.
		lx += 30 + 7*float64(len(s.label())) + 24
	}
}
