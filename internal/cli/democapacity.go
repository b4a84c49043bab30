package cli

import (
	"context"
	"io"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// capacityQuantile returns the quantile of recent closed-loop windows
// taken as the workers' capacity for a step of multiple m. On a machine
// that does anything else, what the workers render moves from one window to
// the next (other processes take a core now and then). An open-loop load
// at the median of those windows outruns them about half the time, and
// any admission control that bounds queueing sheds the excess, as it
// should: a step meant to be at or below capacity is set against the rate
// reached in three windows of four, one the workers sustain. A step past
// capacity is set against the median, so that it is past what the workers
// typically render, and its goodput is judged against that, not against a
// figure they beat half the time.
func capacityQuantile(m float64) float64 {
	if m <= 1 {
		return 0.25
	}
	return 0.5
}

// capacityWindows keeps the rates of the last closed-loop windows and
// estimates from them the workers' capacity. Measured anew
// before each step of the ramp, it follows what else the machine runs
// without being swayed by one window.
//
// The zero value keeps no window: use newCapacityWindows. Not safe for
// concurrent use.
type capacityWindows struct {
	keep   int
	rates  []float64 // oldest first
	lo, hi float64   // of every window added, forgotten or not
}

// newCapacityWindows returns an estimate over the last keep windows.
func newCapacityWindows(keep int) *capacityWindows {
	return &capacityWindows{keep: max(keep, 1)}
}

// add records one window's rate, forgetting the oldest beyond keep.
func (c *capacityWindows) add(rate float64) {
	if len(c.rates) == 0 || rate < c.lo {
		c.lo = rate
	}
	c.hi = max(c.hi, rate)
	c.rates = append(c.rates, rate)
	if n := len(c.rates); n > c.keep {
		c.rates = slices.Delete(c.rates, 0, n-c.keep)
	}
}

// estimate returns the q-quantile of the kept windows' rates, interpolated
// between the two nearest; 0 with none.
func (c *capacityWindows) estimate(q float64) float64 { return quantile(c.rates, q) }

// span returns the lowest and highest rate of every window added, the
// forgotten ones too: how far the capacity moved over the run.
func (c *capacityWindows) span() (lo, hi float64) { return c.lo, c.hi }

// quantile returns the q-quantile of xs (0 <= q <= 1), interpolated
// linearly between the two nearest ranks; 0 for no xs. xs is not changed.
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	pos := q * float64(len(s)-1)
	i := int(math.Floor(pos))
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// closedLoop keeps clients requests to url in flight, each sent as soon as
// the last answered, for n consecutive windows of d, and returns the rate
// of successes (2xx) that ended in each window, per second. A render that
// straddles two windows counts in the one it ends in, so that one loop,
// not n started anew, measures every window without the loss of the
// renders cut at each window's end. It returns early only when ctx ends,
// with ctx's error.
func closedLoop(ctx context.Context, c *http.Client, url string, clients, n int, d time.Duration) ([]float64, error) {
	loop, cancel := context.WithTimeout(ctx, time.Duration(n)*d)
	defer cancel()
	counts := make([]atomic.Int64, n)
	start := time.Now()
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for loop.Err() == nil {
				if getOK(loop, c, url) {
					if i := int(time.Since(start) / d); i < n {
						counts[i].Add(1)
					}
				}
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rates := make([]float64, n)
	for i := range counts {
		rates[i] = float64(counts[i].Load()) / d.Seconds()
	}
	return rates, nil
}

// getOK makes one GET of url and reports whether it succeeded (2xx, the
// body read to its end).
func getOK(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, err = io.Copy(io.Discard, resp.Body)
	return err == nil && resp.StatusCode/100 == 2
}
