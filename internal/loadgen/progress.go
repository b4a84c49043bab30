package loadgen

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"time"
)

// progress writes the live status line. It is owned by Run: one goroutine
// calls run, which returns when ctx is done, after clearing the line.
type progress struct {
	w           io.Writer
	rec         *recorder
	outstanding *atomic.Int64
	start       time.Time
	width       int // of the longest line written, to blank it out
}

func (p *progress) run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	last := p.start
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
			return
		case now := <-t.C:
			w, offered := p.rec.takeWindow()
			line := progressLine(now.Sub(p.start), now.Sub(last), &w, offered, p.outstanding.Load())
			last = now
			p.width = max(p.width, len(line))
			fmt.Fprintf(p.w, "\r%-*s", p.width, line)
		}
	}
}

// progressLine formats one status line from what happened in the last
// interval: sends due, and the requests completed.
func progressLine(elapsed, interval time.Duration, w *tally, offered, inFlight int64) string {
	secs := interval.Seconds()
	if secs <= 0 {
		secs = 1
	}
	p99 := "-"
	if w.hist.Count() > 0 {
		p99 = formatLatency(w.hist.Quantile(0.99))
	}
	return fmt.Sprintf("%6.1fs  offered %s/s  goodput %s/s  errors %s/s  p99 %s  in flight %d",
		elapsed.Seconds(),
		formatCount(float64(offered)/secs),
		formatCount(float64(w.successes)/secs),
		formatCount(float64(w.errorCount())/secs),
		p99, inFlight)
}
