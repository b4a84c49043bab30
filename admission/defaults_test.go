package admission_test

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// With no Limit, a Controller runs limit.Auto: it starts at the usable
// CPUs, not at a fixed 100.
func TestDefaultLimitIsAuto(t *testing.T) {
	want, err := limit.NewAuto(limit.AutoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := admission.New(admission.Options{SampleWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if got := c.Stats().Limit; got != want.Limit() {
		t.Errorf("got limit %d, want Auto's start %d", got, want.Limit())
	}
}

// paced is a constant limit that asks for its own sample window and
// counts its Ticks.
type paced struct {
	window time.Duration
	ticks  atomic.Int64
	last   atomic.Pointer[limit.Window]
}

func (p *paced) Limit() int               { return 10 }
func (p *paced) Observe(limit.Sample) int { return 10 }
func (p *paced) Window() time.Duration    { return p.window }
func (p *paced) Tick(w limit.Window) int  { p.ticks.Add(1); p.last.Store(&w); return 10 }

var _ limit.Paced = (*paced)(nil)

// A Controller without a SampleWindow ticks at the algorithm's own window
// (limit.Paced), else every second; an explicit SampleWindow wins.
func TestSampleWindowDefault(t *testing.T) {
	for _, tc := range []struct {
		name   string
		paced  bool
		window time.Duration
		want   int64 // ticks in 2 s
	}{
		{"paced", true, 0, 8},
		{"not paced", false, 0, 2},
		{"explicit", true, 500 * time.Millisecond, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p := &paced{window: 250 * time.Millisecond}
				var alg limit.Algorithm = p
				if !tc.paced {
					alg = struct{ limit.Algorithm }{p} // hides Window
				}
				c, err := admission.New(admission.Options{Limit: alg, SampleWindow: tc.window})
				if err != nil {
					t.Fatal(err)
				}
				time.Sleep(2*time.Second + time.Millisecond)
				c.Close()
				if got := p.ticks.Load(); got != tc.want {
					t.Errorf("got %d ticks in 2 s, want %d", got, tc.want)
				}
			})
		})
	}
}

// The Window a Tick gets carries the probed means: the in-flight count
// held through the window, and the CPUs.
func TestTickWindowMeasured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := &paced{window: 100 * time.Millisecond}
		c, err := admission.New(admission.Options{Limit: p})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var permits []admission.Permit
		for range 4 {
			pm, err := c.Acquire(t.Context(), admission.Request{})
			if err != nil {
				t.Fatal(err)
			}
			permits = append(permits, pm)
		}
		time.Sleep(250 * time.Millisecond)
		w := p.last.Load()
		if w == nil || w.MeanInflight != 4 || w.PeakInflight != 4 || w.CPUs < 1 {
			t.Errorf("got window %+v, want MeanInflight 4, PeakInflight 4, CPUs >= 1", w)
		}
		for _, pm := range permits {
			pm.Release()
		}
	})
}
