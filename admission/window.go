package admission

import (
	"log/slog"
	"math"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// loop closes a sample window every c.window: it feeds the limit algorithm
// a Tick and logs what changed, the seed's limit-change and per-window
// rejection messages as structured records.
func (c *Controller) loop() {
	defer c.wg.Done()
	t := time.NewTicker(c.window)
	defer t.Stop()
	var lastShed [numReasons]uint64
	for {
		select {
		case <-c.stop:
			return
		case now := <-t.C:
			c.tick(now, &lastShed)
		}
	}
}

func (c *Controller) tick(now time.Time, lastShed *[numReasons]uint64) {
	inflight := int(inflightOf(c.state.Load()))
	peak := int(c.peak.Swap(0))
	w := limit.Window{Now: now, Saturation: math.NaN(), Inflight: inflight, PeakInflight: max(peak, inflight)}
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
