package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
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
		if xs[n], err = parseFloat(f[i]); err != nil {
			return n, err
		}
		if ys[n], err = parseFloat(f[i+1]); err != nil {
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

func TestAxisScale(t *testing.T) {
	tests := []struct{ v, top, step float64 }{
		{100, 100, 20},
		{93, 100, 20},
		{1000, 1000, 200},
		{7, 8, 2},
		{0, 1, 0.2},
		{0.3, 0.3, 0.1},
	}
	for _, tt := range tests {
		top, step := axisScale(tt.v)
		if math.Abs(top-tt.top) > 1e-9 || math.Abs(step-tt.step) > 1e-9 {
			t.Errorf("axisScale(%v): got %v, %v, want %v, %v", tt.v, top, step, tt.top, tt.step)
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
