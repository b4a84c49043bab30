package eval

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// seriesOf builds a series of 250 ms points with the given goodputs.
func seriesOf(goodput ...float64) []loadgen.Point {
	s := make([]loadgen.Point, len(goodput))
	for i, g := range goodput {
		s[i] = loadgen.Point{Start: time.Duration(i) * 250 * time.Millisecond, Goodput: g}
	}
	return s
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestMovingGoodput(t *testing.T) {
	got := MovingGoodput(seriesOf(4, 8, 0, 4, 100), 250*time.Millisecond, time.Second)
	want := []float64{4, 28, 104.0 / 3, 52, 100}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-9 {
			t.Errorf("point %d: got %v, want %v", i, got[i], want[i])
		}
	}
}

func TestFindRecovery(t *testing.T) {
	const bucket = 250 * time.Millisecond
	cat := func(parts ...[]float64) []float64 {
		var out []float64
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	tests := []struct {
		name      string
		goodput   []float64
		from, end time.Duration
		wantOK    bool
		wantAfter time.Duration
	}{
		{"back at once", repeat(100, 40), 2 * time.Second, 10 * time.Second, true, 0},
		{"back after 2 s of nothing", cat(repeat(100, 8), repeat(0, 8), repeat(100, 24)), 2 * time.Second, 10 * time.Second, true, 2 * time.Second},
		{"a dip inside the hold restarts the wait", cat(repeat(0, 8), repeat(100, 4), repeat(0, 4), repeat(100, 24)), 0, 10 * time.Second, true, 4 * time.Second},
		{"never back", cat(repeat(100, 8), repeat(50, 32)), 2 * time.Second, 10 * time.Second, false, 0},
		{"back too late to hold before the end", cat(repeat(0, 32), repeat(100, 8)), 0, 10 * time.Second, false, 0},
		{"the point before from is not looked at", cat(repeat(100, 4), repeat(0, 36)), time.Second, 10 * time.Second, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := FindRecovery(seriesOf(tt.goodput...), bucket, tt.from, tt.end, 90, 2*time.Second)
			if r.Recovered != tt.wantOK || r.After != tt.wantAfter {
				t.Errorf("got recovered %v after %v, want %v after %v", r.Recovered, r.After, tt.wantOK, tt.wantAfter)
			}
			if r.Threshold != 90 {
				t.Errorf("got threshold %v, want 90", r.Threshold)
			}
		})
	}
}

func TestWasted(t *testing.T) {
	tests := []struct{ rendered, successes, want int64 }{
		{100, 60, 40},
		{100, 100, 0},
		{10, 12, 0}, // a success no worker rendered (nginx's /ping)
	}
	for _, tt := range tests {
		if got := Wasted(tt.rendered, tt.successes); got != tt.want {
			t.Errorf("Wasted(%d, %d): got %d, want %d", tt.rendered, tt.successes, got, tt.want)
		}
	}
}

func TestMedian(t *testing.T) {
	tests := []struct {
		xs   []float64
		want float64
	}{
		{[]float64{3, 1, 2}, 2},
		{[]float64{4, 1, 3, 2}, 2.5},
		{[]float64{7}, 7},
	}
	for _, tt := range tests {
		in := append([]float64(nil), tt.xs...)
		if got := Median(in); got != tt.want {
			t.Errorf("Median(%v): got %v, want %v", tt.xs, got, tt.want)
		}
		for i := range in {
			if in[i] != tt.xs[i] {
				t.Fatalf("Median modified its input: got %v, want %v", in, tt.xs)
			}
		}
	}
	if got := Median(nil); !math.IsNaN(got) {
		t.Errorf("Median(nil): got %v, want NaN", got)
	}
}

func TestMergeSeries(t *testing.T) {
	a := []loadgen.Point{{Start: 0, Offered: 10, Goodput: 8, Errors: 2, P99: 5}, {Start: 1, Offered: 10, Goodput: 10}}
	b := []loadgen.Point{{Start: 0, Offered: 0}, {Start: 1, Offered: 20, Goodput: 5, Attempts: 30, P50: 3, P99: 9}, {Start: 2, Offered: 20, Goodput: 20}}
	got := MergeSeries(a, b)
	want := []loadgen.Point{
		{Start: 0, Offered: 10, Goodput: 8, Errors: 2, P99: 5},
		{Start: 1, Offered: 30, Goodput: 15, Attempts: 30, P50: 3, P99: 9},
		{Start: 2, Offered: 20, Goodput: 20},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d points, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("point %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestQuietestKeepsTheOthers(t *testing.T) {
	attempt := func(others float64) *RunResult {
		return &RunResult{CPU: CPUUse{Others: others, Wall: 10}}
	}
	a, b, c := attempt(5), attempt(1), attempt(3)
	got := quietest([]*RunResult{a, b, c})
	if got != b {
		t.Fatalf("got the attempt with %v other cores, want the quietest (0.1)", got.OtherCores())
	}
	if got.Attempts != 3 || len(got.Discarded) != 2 || got.Discarded[0] != a || got.Discarded[1] != c {
		t.Errorf("got %d attempts and %d discarded, want 3 and the other two in order", got.Attempts, len(got.Discarded))
	}
}

func TestAllSeries(t *testing.T) {
	a := &loadgen.Report{Series: seriesOf(1, 2)}
	b := &loadgen.Report{Series: seriesOf(10, 20)}
	one := &RunResult{Reports: []*loadgen.Report{a}}
	if got := one.AllSeries(); len(got) != 2 || got[1].Goodput != 2 {
		t.Errorf("one stream: got %+v, want its report's series", got)
	}
	two := &RunResult{Reports: []*loadgen.Report{a, b}}
	if got := two.AllSeries(); len(got) != 2 || got[0].Goodput != 11 || got[1].Goodput != 22 {
		t.Errorf("two streams: got %+v, want them added", got)
	}
}
