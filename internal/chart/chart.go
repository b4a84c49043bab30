// Package chart draws line charts as self-contained SVG files: the run
// chart of `sluice bench` (internal/loadgen) and the comparison charts of
// the evaluation suite (internal/eval). It needs no fonts, scripts or
// styles from outside the file, so a chart renders the same on GitHub, in a
// browser and in an image viewer.
package chart

import (
	"fmt"
	"io"
	"strings"
)

// Chart is a line chart of several series over one x axis, against a left
// y axis and, for the series marked Right, a second y axis on the right.
// The zero value is an empty chart with its legend on the right.
type Chart struct {
	Title    string
	Subtitle string
	XLabel   string
	YLabel   string
	// Y2Label names the right axis, drawn when a series is Right.
	Y2Label string
	// LogX spaces the x axis by log2, for load multiples 0.5, 1, 2, 4, 8;
	// every x must then be positive.
	LogX bool
	// XMin and XMax fix the x axis when XMax > XMin (a run's whole
	// duration, though its last point is earlier); otherwise the axis spans
	// the series' x values and XTicks.
	XMin, XMax float64
	// XTicks, when set, are the only x labels drawn. Otherwise the labels
	// are stepped on the 1-2-5 ladder, about XTickCount of them (zero: 5).
	XTicks     []float64
	XTickCount int
	Legend     Legend
	// Dots marks each point of a series of at most 20 points, for values
	// measured one by one (load multiples) rather than sampled over time;
	// past 20 the dots would merge into a line.
	Dots   bool
	Series []Series
	// HLines are horizontal reference lines (capacity, a target), on the
	// left axis.
	HLines []Mark
	// VLines are vertical reference lines (phase boundaries). One at the
	// start of the x axis draws only its label: the axis is its line.
	VLines []Mark
}

// Series is one line. X and Y have the same length; a NaN Y leaves a gap.
type Series struct {
	// Name is the path's data-series attribute, and the legend's text
	// unless Label is set.
	Name  string
	Label string
	X, Y  []float64
	// Right puts the series on the right axis.
	Right bool
	// Color, Width and Dash are the SVG stroke, stroke-width and
	// stroke-dasharray; zero: a colour of the palette by the series'
	// place, 2, and a solid line.
	Color string
	Width string
	Dash  string
}

// Mark is a labelled reference line at Value.
type Mark struct {
	Value float64
	Label string
}

// Legend is where the legend of the series goes.
type Legend int

const (
	// LegendRight is a column right of the plot, one entry per line.
	LegendRight Legend = iota
	// LegendTop is a row above the plot, which leaves the right of the
	// plot to a second y axis.
	LegendTop
)

// dotsMax is the most points a series may have for Dots to mark them.
const dotsMax = 20

// width is the chart's width in SVG user units, for either legend.
const width = 960

// layout is the geometry that follows from where the legend goes.
type layout struct {
	height      int
	left, right int // the plot's x bounds
	top, bottom int // the plot's y bounds
	subtitleY   int
	markLabelDY int    // a vertical mark's label below the plot's top
	marksClass  string // the class of the reference lines' group
}

func (l Legend) layout() layout {
	if l == LegendTop {
		return layout{height: 500, left: 80, right: width - 90, top: 90, bottom: 500 - 60,
			subtitleY: 42, markLabelDY: 14, marksClass: "phases"}
	}
	return layout{height: 520, left: 80, right: width - 200, top: 70, bottom: 520 - 60,
		subtitleY: 44, markLabelDY: 12, marksClass: "marks"}
}

// palette is colour-blind friendly (Okabe-Ito).
var palette = [...]string{"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"}

func (s Series) color(i int) string {
	if s.Color != "" {
		return s.Color
	}
	return palette[i%len(palette)]
}

func (s Series) width() string {
	if s.Width != "" {
		return s.Width
	}
	return "2"
}

func (s Series) dashAttr() string {
	if s.Dash == "" {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%s"`, s.Dash)
}

func (s Series) label() string {
	if s.Label != "" {
		return s.Label
	}
	return s.Name
}

// WriteSVG draws the chart. Each series is a <path> with a data-series
// attribute naming it. It fails, writing nothing, on a series whose X and Y
// differ in length or with an x at or below zero on a log axis.
func (c *Chart) WriteSVG(w io.Writer) error {
	if err := c.check(); err != nil {
		return err
	}
	p := c.plot()
	var b strings.Builder
	p.writeFrame(&b, c)
	p.writeMarks(&b, c)
	for i, s := range c.Series {
		p.writeSeries(&b, i, s, c.Dots)
		if c.Legend == LegendRight {
			p.writeRightEntry(&b, i, s)
		}
	}
	if c.Legend == LegendTop {
		p.writeTopLegend(&b, c.Series)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func (c *Chart) check() error {
	for _, s := range c.Series {
		if len(s.X) != len(s.Y) {
			return fmt.Errorf("chart: series %q: %d x values, %d y values", s.Name, len(s.X), len(s.Y))
		}
		for _, x := range s.X {
			if c.LogX && x <= 0 {
				return fmt.Errorf("chart: series %q: x %v on a log axis", s.Name, x)
			}
		}
	}
	return nil
}
