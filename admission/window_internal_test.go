package admission

import (
	"math"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// A window's measured fields are the means and maxima of its probes, and
// the CPU the process used over the window's length times its CPUs.
func TestWindowAcc(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var a windowAcc
	a.reset(t0, limit.ProbeReading{Runnable: 7, CPUTime: time.Second, CPUs: 2})
	a.add(4, 0, limit.ProbeReading{Runnable: 2, CPUTime: -1, CPUs: 2})
	a.add(10, 5, limit.ProbeReading{Runnable: 6, CPUTime: -1, CPUs: 2})
	a.add(1, 2, limit.ProbeReading{Runnable: 1, CPUTime: -1, CPUs: 2})
	w := a.window(t0.Add(100*time.Millisecond), limit.ProbeReading{Runnable: 0, CPUTime: time.Second + 150*time.Millisecond, CPUs: 2})
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"MeanInflight", w.MeanInflight, 5},
		{"PeakInflight", float64(w.PeakInflight), 10},
		{"Queued", float64(w.Queued), 5},
		{"Runnable", w.Runnable, 3},
		{"CPUBusy", w.CPUBusy, 0.75},
		{"CPUs", w.CPUs, 2},
	} {
		if math.Abs(c.got-c.want) > 1e-9 {
			t.Errorf("%s: got %v, want %v", c.name, c.got, c.want)
		}
	}

	// Unknown readings stay unknown; a reset starts over.
	a.reset(t0, limit.ProbeReading{Runnable: -1, CPUTime: -1, CPUs: 2})
	a.add(3, 0, limit.ProbeReading{Runnable: -1, CPUTime: -1, CPUs: 2})
	w = a.window(t0.Add(100*time.Millisecond), limit.ProbeReading{Runnable: -1, CPUTime: -1, CPUs: 2})
	if !math.IsNaN(w.Runnable) || !math.IsNaN(w.CPUBusy) || w.MeanInflight != 3 || w.PeakInflight != 3 {
		t.Errorf("got %+v, want NaN Runnable and CPUBusy, MeanInflight 3, PeakInflight 3", w)
	}
}
