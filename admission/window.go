package admission

import (
	"log/slog"
	"math"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// probesPerWindow is how many times per sample window the loop reads the
// in-flight count, the queue and the process's load (limit.Probe): means
// over the window, without adding work to the request path.
const probesPerWindow = 10

// loop closes a sample window every c.window: it feeds the limit algorithm
// a Tick and logs what changed: a record when the limit moved and one with
// the window's sheds by reason, so that an operator without a metrics stack
// still sees why requests were refused. In between it probes the
// state probesPerWindow times for the window's means, and sets how many
// requests are timed (pace).
func (c *Controller) loop() {
	defer c.wg.Done()
	probe := limit.NewProbe()
	t := time.NewTicker(max(c.window/probesPerWindow, time.Millisecond))
	defer t.Stop()
	var lastShed [numReasons]uint64
	var acc windowAcc
	start := time.Now()
	acc.reset(start, probe.Read(start))
	last, timed := start, c.timed.Load()
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			n := c.timed.Load()
			c.pace(n-timed, now.Sub(last))
			last, timed = now, n
			r := probe.Read(now)
			acc.add(int(inflightOf(c.state.Load())), c.queued(), r)
			if acc.n >= probesPerWindow || now.Sub(acc.begin) >= c.window {
				c.tick(now, acc.window(now, r), &lastShed)
				acc.reset(now, r)
			}
		}
	}
}

func (c *Controller) queued() int {
	if c.q == nil {
		return 0
	}
	return int(c.q.size.Load())
}

// windowAcc accumulates one window's probes.
type windowAcc struct {
	begin    time.Time
	cpu0     time.Duration // process CPU time at begin, < 0 unknown
	n        int
	inflight int // sum of the probed in-flight counts
	peak     int
	queued   int // highest
	runnable int // sum; < 0 once a probe did not know
}

func (a *windowAcc) reset(now time.Time, r limit.ProbeReading) {
	*a = windowAcc{begin: now, cpu0: r.CPUTime}
}

func (a *windowAcc) add(inflight, queued int, r limit.ProbeReading) {
	a.n++
	a.inflight += inflight
	a.peak = max(a.peak, inflight)
	a.queued = max(a.queued, queued)
	if r.Runnable < 0 || a.runnable < 0 {
		a.runnable = -1
	} else {
		a.runnable += r.Runnable
	}
}

// window returns the Window's measured fields for the window ending at
// now with reading r; Now, Inflight, PeakInflight and Saturation are the
// caller's to complete.
func (a *windowAcc) window(now time.Time, r limit.ProbeReading) limit.Window {
	w := limit.Window{Now: now, Runnable: math.NaN(), CPUBusy: math.NaN(), CPUs: r.CPUs,
		PeakInflight: a.peak, Queued: a.queued}
	if a.n > 0 {
		w.MeanInflight = float64(a.inflight) / float64(a.n)
		if a.runnable >= 0 {
			w.Runnable = float64(a.runnable) / float64(a.n)
		}
	}
	if el := now.Sub(a.begin); el > 0 && a.cpu0 >= 0 && r.CPUTime >= 0 && r.CPUs > 0 {
		w.CPUBusy = float64(r.CPUTime-a.cpu0) / (float64(el) * r.CPUs)
	}
	return w
}

func (c *Controller) tick(now time.Time, w limit.Window, lastShed *[numReasons]uint64) {
	inflight := int(inflightOf(c.state.Load()))
	peak := int(c.peak.Swap(0))
	w.Now, w.Saturation, w.Inflight = now, math.NaN(), inflight
	w.PeakInflight = max(w.PeakInflight, peak, inflight)
	w.Queued = max(w.Queued, c.queued())
	if c.signal != nil {
		w.Saturation = c.signal.Saturation()
	}
	before := limitOf(c.state.Load())
	c.adopt(c.alg.Tick(w))
	after := limitOf(c.state.Load())
	if c.log == nil {
		return
	}
	if after != before {
		c.log.Info("admission: limit changed",
			slog.Int64("from", before), slog.Int64("to", after),
			slog.Float64("saturation", w.Saturation), slog.Int("inflight", inflight))
	}
	var attrs []any
	for r := ReasonQueueFull; r < numReasons; r++ {
		n := c.shedCount[r].Load()
		if d := n - lastShed[r]; d > 0 {
			attrs = append(attrs, slog.Uint64(r.String(), d))
		}
		lastShed[r] = n
	}
	if len(attrs) > 0 {
		c.log.Warn("admission: shed requests in the last window",
			slog.Group("shed", attrs...), slog.Int64("limit", after), slog.Duration("window", c.window))
	}
}
