package cli

import (
	"context"
	"math"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

func TestQuantile(t *testing.T) {
	for _, tt := range []struct {
		xs   []float64
		q    float64
		want float64
	}{
		{nil, 0.25, 0},
		{[]float64{150}, 0.25, 150},
		{[]float64{200, 100, 150, 175, 125}, 0, 100},
		{[]float64{200, 100, 150, 175, 125}, 0.25, 125},
		{[]float64{200, 100, 150, 175, 125}, 0.5, 150},
		{[]float64{200, 100, 150, 175, 125}, 1, 200},
		{[]float64{100, 200}, 0.25, 125}, // between the two nearest ranks
	} {
		if got := quantile(tt.xs, tt.q); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("quantile(%v, %g) = %g, want %g", tt.xs, tt.q, got, tt.want)
		}
	}
}

// One window slowed by another process does not set the capacity, and the
// estimate is what the workers reached in three windows of four, not their
// mean, which an open-loop load would outrun half the time.
func TestCapacityWindowsEstimate(t *testing.T) {
	c := newCapacityWindows(8)
	for _, r := range []float64{180, 176, 60, 184, 178, 182, 170, 186} {
		c.add(r)
	}
	if got, want := c.estimate(0.25), 174.5; math.Abs(got-want) > 1e-9 {
		t.Errorf("lower quartile = %g, want %g (unmoved by the 60)", got, want)
	}
	if lo, hi := c.span(); lo != 60 || hi != 186 {
		t.Errorf("span = %g-%g, want 60-186", lo, hi)
	}
}

// The estimate follows the machine: windows older than the last keep are
// forgotten, so a capacity that fell (another process took a core) is the
// capacity within keep windows.
func TestCapacityWindowsForget(t *testing.T) {
	c := newCapacityWindows(4)
	for _, r := range []float64{180, 180, 180, 180, 100, 100, 100, 100} {
		c.add(r)
	}
	if got := c.estimate(0.25); got != 100 {
		t.Errorf("lower quartile = %g after four windows at 100, want 100", got)
	}
	if lo, hi := c.span(); lo != 100 || hi != 180 {
		t.Errorf("span = %g-%g, want 100-180 (every window, the forgotten too)", lo, hi)
	}
	if got := newCapacityWindows(4).estimate(0.5); got != 0 {
		t.Errorf("estimate with no window = %g, want 0", got)
	}
}

// The closed loop counts each success in the window it ended in, per
// second: a single-threaded worker rendering for 10 ms is 100/s in every
// window, and 50/s in the window during which its renders took 20 ms.
func TestClosedLoopWindows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := testutil.NewListener()
		// One render at a time: a channel, on which a wait is durably
		// blocked in the bubble, as on a mutex it is not.
		core := make(chan struct{}, 1)
		start := time.Now()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			core <- struct{}{}
			defer func() { <-core }()
			render := 10 * time.Millisecond
			if el := time.Since(start); el >= 200*time.Millisecond && el < 300*time.Millisecond {
				render = 20 * time.Millisecond // another process took half the core
			}
			time.Sleep(render)
			w.Write([]byte("ok"))
		})}
		go srv.Serve(ln)
		c := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
		defer srv.Shutdown(context.Background()) // after the client's connections close
		defer c.CloseIdleConnections()
		rates, err := closedLoop(t.Context(), c, "http://worker/", 4, 5, 100*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		want := []float64{100, 100, 50, 100, 100}
		for i := range want {
			// A render straddling a window's edge counts in the next.
			if math.Abs(rates[i]-want[i]) > 10 {
				t.Errorf("window %d: %v/s, want %v/s (all: %v)", i, rates[i], want[i], rates)
			}
		}
	})
}

// A loop whose context ends returns its error, not rates.
func TestClosedLoopCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ln := testutil.NewListener()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(10 * time.Millisecond)
		})}
		go srv.Serve(ln)
		c := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
		defer srv.Shutdown(context.Background())
		defer c.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(t.Context(), 150*time.Millisecond)
		defer cancel()
		if rates, err := closedLoop(ctx, c, "http://worker/", 2, 5, 100*time.Millisecond); err == nil {
			t.Errorf("got rates %v, want the context's error", rates)
		}
	})
}

// A step at or below capacity is set against the rate the workers sustain
// in three windows of four; one past it against the median, what they
// typically render.
func TestCapacityQuantile(t *testing.T) {
	for _, tt := range []struct{ m, want float64 }{{0.5, 0.25}, {1, 0.25}, {2, 0.5}, {4, 0.5}} {
		if got := capacityQuantile(tt.m); got != tt.want {
			t.Errorf("capacityQuantile(%g) = %g, want %g", tt.m, got, tt.want)
		}
	}
}
