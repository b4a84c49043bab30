package chart

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// svgPaths parses an SVG and returns its paths' d attributes by their
// data-series name; it fails the test on XML that does not parse.
func svgPaths(t *testing.T, svg []byte) map[string]string {
	t.Helper()
	paths := map[string]string{}
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return paths
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		el, ok := tok.(xml.StartElement)
		if !ok || el.Name.Local != "path" {
			continue
		}
		var name, d string
		for _, a := range el.Attr {
			switch a.Name.Local {
			case "data-series":
				name = a.Value
			case "d":
				d = a.Value
			}
		}
		if name != "" {
			paths[name] = d
		}
	}
}

func TestChartDrawsEverySeries(t *testing.T) {
	c := &Chart{
		Title: "goodput <&> load", XLabel: "x", YLabel: "y", LogX: true, XTicks: []float64{0.5, 1, 2, 4, 8},
		Series: []Series{
			{Name: "sluice", X: []float64{0.5, 1, 2, 4, 8}, Y: []float64{50, 98, 97, 95, 93}},
			{Name: "round-robin", X: []float64{0.5, 1, 2, 4, 8}, Y: []float64{50, 97, math.NaN(), 5, 2}},
		},
		HLines: []Mark{{100, "capacity"}},
	}
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	paths := svgPaths(t, b.Bytes())
	for _, name := range []string{"sluice", "round-robin"} {
		if paths[name] == "" {
			t.Errorf("got no path for series %q, want one", name)
		}
	}
	if got := strings.Count(paths["sluice"], "M"); got != 1 {
		t.Errorf("sluice: got %d moves, want 1 (one unbroken line)", got)
	}
	if got := strings.Count(paths["round-robin"], "M"); got != 2 {
		t.Errorf("round-robin: got %d moves, want 2 (a gap at the NaN)", got)
	}
	if !strings.Contains(b.String(), "goodput &lt;&amp;&gt; load") {
		t.Errorf("the title was not escaped: %s", b.String()[:300])
	}
}

func TestChartLogXSpacesMultiplesEvenly(t *testing.T) {
	c := &Chart{LogX: true, Series: []Series{{Name: "s", X: []float64{1, 2, 4}, Y: []float64{1, 1, 1}}}}
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	var xs [3]float64
	var ys [3]float64
	d := svgPaths(t, b.Bytes())["s"]
	d = strings.NewReplacer("M", "", "L", "").Replace(d)
	if n, err := sscanPairs(d, xs[:], ys[:]); err != nil || n != 3 {
		t.Fatalf("parsing %q: %d pairs, %v", d, n, err)
	}
	if a, b := xs[1]-xs[0], xs[2]-xs[1]; math.Abs(a-b) > 0.15 {
		t.Errorf("got steps %v and %v between x=1, 2, 4, want equal steps on a log axis", a, b)
	}
}

func sscanPairs(s string, xs, ys []float64) (int, error) {
	f := strings.Fields(s)
	n := 0
	for i := 0; i+1 < len(f) && n < len(xs); i += 2 {
		var err error
		if xs[n], err = strconv.ParseFloat(f[i], 64); err != nil {
			return n, err
		}
		if ys[n], err = strconv.ParseFloat(f[i+1], 64); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

func TestChartRejectsBadSeries(t *testing.T) {
	tests := []struct {
		name string
		c    Chart
	}{
		{"lengths differ", Chart{Series: []Series{{Name: "s", X: []float64{1, 2}, Y: []float64{1}}}}},
		{"zero on a log axis", Chart{LogX: true, Series: []Series{{Name: "s", X: []float64{0, 1}, Y: []float64{1, 1}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.c.WriteSVG(io.Discard); err == nil {
				t.Error("got no error, want one")
			}
		})
	}
}

func TestNiceScale(t *testing.T) {
	tests := []struct{ v, top, step float64 }{
		{100, 100, 20},
		{93, 100, 20},
		{1000, 1000, 200},
		{7, 8, 2},
		{0, 1, 0.2},
		{0.3, 0.3, 0.1},
	}
	for _, tt := range tests {
		top, step := niceScale(tt.v)
		if math.Abs(top-tt.top) > 1e-9 || math.Abs(step-tt.step) > 1e-9 {
			t.Errorf("niceScale(%v): got %v, %v, want %v, %v", tt.v, top, step, tt.top, tt.step)
		}
	}
}

func TestFmtTick(t *testing.T) {
	tests := []struct {
		v    float64
		want string
	}{{0.5, "0.5"}, {8, "8"}, {0.1 + 0.2, "0.3"}, {1500, "1500"}}
	for _, tt := range tests {
		if got := fmtTick(tt.v); got != tt.want {
			t.Errorf("fmtTick(%v): got %q, want %q", tt.v, got, tt.want)
		}
	}
}

// svgElements parses an SVG and returns its elements named name, each as
// its attributes, and the text of every <text>.
func svgElements(t *testing.T, svg []byte, name string) (els []map[string]string, texts []string) {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return els, texts
		}
		if err != nil {
			t.Fatalf("the SVG is not well-formed XML: %v", err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			if el.Name.Local != name {
				continue
			}
			attrs := map[string]string{}
			for _, a := range el.Attr {
				attrs[a.Name.Local] = a.Value
			}
			els = append(els, attrs)
		case xml.CharData:
			texts = append(texts, string(el))
		}
	}
}

func writeSVG(t *testing.T, c *Chart) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := c.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// firstY returns the y of a path's first point.
func firstY(t *testing.T, d string) float64 {
	t.Helper()
	f := strings.Fields(strings.TrimPrefix(d, "M"))
	if len(f) < 2 {
		t.Fatalf("path %q has no point", d)
	}
	y, err := strconv.ParseFloat(f[1], 64)
	if err != nil {
		t.Fatal(err)
	}
	return y
}

// A Right series is scaled on its own axis: a value of 5 on the right,
// where it is the largest, stands as high as 500 on the left.
func TestChartRightAxis(t *testing.T) {
	c := &Chart{
		YLabel: "rate", Y2Label: "latency (ms)", Legend: LegendTop,
		Series: []Series{
			{Name: "rate", X: []float64{0, 1}, Y: []float64{500, 500}},
			{Name: "p99", X: []float64{0, 1}, Y: []float64{5, 5}, Right: true},
		},
	}
	svg := writeSVG(t, c)
	paths := svgPaths(t, svg)
	if l, r := firstY(t, paths["rate"]), firstY(t, paths["p99"]); l != r {
		t.Errorf("got y %v on the left and %v on the right, want the same height for each axis's top value", l, r)
	}
	_, texts := svgElements(t, svg, "text")
	if !slices.Contains(texts, "latency (ms)") {
		t.Errorf("no right axis label in %q", texts)
	}
	if !strings.Contains(string(svg), "V90\"") {
		t.Errorf("the axes are not closed on the right for the second axis:\n%s", svg)
	}

	c.Series = c.Series[:1]
	_, texts = svgElements(t, writeSVG(t, c), "text")
	if slices.Contains(texts, "latency (ms)") {
		t.Error("a right axis label without a Right series, want none")
	}
}

// The legend goes right of the plot by default, or in a row above it; its
// text is a series' Label when set, else its Name.
func TestChartLegend(t *testing.T) {
	series := []Series{
		{Name: "a", X: []float64{0, 1}, Y: []float64{1, 2}},
		{Name: "b", Label: "bee", X: []float64{0, 1}, Y: []float64{2, 1}},
	}
	tests := []struct {
		legend Legend
		same   string // the coordinate all entries share
	}{
		{LegendRight, "x1"},
		{LegendTop, "y1"},
	}
	for _, tt := range tests {
		c := &Chart{Legend: tt.legend, Series: series}
		svg := writeSVG(t, c)
		lines, texts := svgElements(t, svg, "line")
		var entries []map[string]string
		for _, l := range lines {
			if l["stroke-width"] == "2" { // the grid's lines are 1 wide
				entries = append(entries, l)
			}
		}
		if len(entries) != 2 {
			t.Fatalf("legend %d: got %d legend lines, want 2", tt.legend, len(entries))
		}
		if entries[0][tt.same] != entries[1][tt.same] {
			t.Errorf("legend %d: entries at %s %s and %s, want the same", tt.legend, tt.same, entries[0][tt.same], entries[1][tt.same])
		}
		if !slices.Contains(texts, "a") || !slices.Contains(texts, "bee") || slices.Contains(texts, "b") {
			t.Errorf("legend %d: texts %q, want a and bee", tt.legend, texts)
		}
	}
}

// Series take the palette's colours in order and a width of 2 unless they
// set their own.
func TestChartSeriesStyle(t *testing.T) {
	c := &Chart{Series: []Series{
		{Name: "a", X: []float64{0}, Y: []float64{1}},
		{Name: "b", X: []float64{0}, Y: []float64{1}},
		{Name: "c", X: []float64{0}, Y: []float64{1}, Color: "#123456", Width: "1.5", Dash: "2 3"},
	}}
	paths, _ := svgElements(t, writeSVG(t, c), "path")
	got := map[string][3]string{}
	for _, p := range paths {
		if name := p["data-series"]; name != "" {
			got[name] = [3]string{p["stroke"], p["stroke-width"], p["stroke-dasharray"]}
		}
	}
	want := map[string][3]string{
		"a": {palette[0], "2", ""},
		"b": {palette[1], "2", ""},
		"c": {"#123456", "1.5", "2 3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got styles %v, want %v", got, want)
	}
}

// Dots mark the points of short series only.
func TestChartDots(t *testing.T) {
	short := Series{Name: "short", X: []float64{1, 2, 3}, Y: []float64{1, math.NaN(), 3}}
	long := Series{Name: "long"}
	for i := range dotsMax + 1 {
		long.X, long.Y = append(long.X, float64(i)), append(long.Y, 1)
	}
	tests := []struct {
		dots bool
		want int
	}{{false, 0}, {true, 2}} // the NaN has no dot, the long series none
	for _, tt := range tests {
		c := &Chart{Dots: tt.dots, Series: []Series{short, long}}
		if circles, _ := svgElements(t, writeSVG(t, c), "circle"); len(circles) != tt.want {
			t.Errorf("Dots %v: got %d dots, want %d", tt.dots, len(circles), tt.want)
		}
	}
}

// XMin and XMax fix the x axis beyond the data, and XTickCount sets the
// density of its stepped labels; a vertical mark at the axis's start is a
// label without a line.
func TestChartXAxis(t *testing.T) {
	c := &Chart{
		XMax: 20, XTickCount: 10,
		Series: []Series{{Name: "s", X: []float64{0, 10}, Y: []float64{1, 1}}},
		VLines: []Mark{{Value: 0, Label: "start"}, {Value: 10, Label: "half"}},
	}
	svg := writeSVG(t, c)
	d := svgPaths(t, svg)["s"]
	f := strings.Fields(strings.NewReplacer("M", "", "L", "").Replace(d))
	x0, _ := strconv.ParseFloat(f[0], 64)
	x1, _ := strconv.ParseFloat(f[2], 64)
	l := LegendRight.layout()
	if mid := float64(l.left+l.right) / 2; x0 != float64(l.left) || x1 != mid {
		t.Errorf("got x %v and %v, want the axis's start %d and its middle %v", x0, x1, l.left, mid)
	}
	lines, texts := svgElements(t, svg, "line")
	marks := 0
	for _, ln := range lines {
		if ln["stroke-dasharray"] == "3 3" {
			marks++
		}
	}
	if marks != 1 {
		t.Errorf("got %d vertical mark lines, want 1 (none at the axis's start)", marks)
	}
	for _, want := range []string{"start", "half", "0", "2", "20"} {
		if !slices.Contains(texts, want) {
			t.Errorf("no text %q in %q", want, texts)
		}
	}
}

func TestTickLabel(t *testing.T) {
	tests := []struct {
		v, step float64
		want    string
	}{{0, 0.5, "0.0"}, {1, 0.5, "1.0"}, {1.5, 0.5, "1.5"}, {40, 20, "40"}, {0.3, 0.1, "0.3"}, {0.02, 0.01, "0.02"}}
	for _, tt := range tests {
		if got := tickLabel(tt.v, tt.step); got != tt.want {
			t.Errorf("tickLabel(%v, %v): got %q, want %q", tt.v, tt.step, got, tt.want)
		}
	}
}

func TestLinearTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		n      int
		want   []float64
		step   float64
	}{
		{0, 40, 5, []float64{0, 10, 20, 30, 40}, 10},
		{0, 40, 10, []float64{0, 5, 10, 15, 20, 25, 30, 35, 40}, 5},
		{0.5, 3, 5, []float64{0.5, 1, 1.5, 2, 2.5, 3}, 0.5},
	}
	for _, tt := range tests {
		got, step := linearTicks(tt.lo, tt.hi, tt.n)
		if step != tt.step || !slices.EqualFunc(got, tt.want, func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }) {
			t.Errorf("linearTicks(%v, %v, %d): got %v step %v, want %v step %v", tt.lo, tt.hi, tt.n, got, step, tt.want, tt.step)
		}
	}
}
