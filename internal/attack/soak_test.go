package attack

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestSoak is opt-in (SLUICE_SOAK=1; SLUICE_SOAK_DURATION, default 10m):
// sluice in front of two demo workers under 8x their capacity, open loop,
// with 10,000 more connections held open (each pinging every 30 s, so
// keep-alive never closes them), for the whole duration. Every 30 s it
// logs sluice's RSS, goroutines and connection and shed counts; at the
// end RSS must be at most 150 MB and the goroutines no more than at the
// end of the first minute plus 10% (no growth). It needs 10,500 file
// descriptors and both cores for itself: run it alone, e.g.
//
//	SLUICE_SOAK=1 go test -run TestSoak -v -timeout 20m ./internal/attack/
func TestSoak(t *testing.T) {
	if os.Getenv("SLUICE_SOAK") != "1" {
		t.Skip("opt-in: SLUICE_SOAK=1")
	}
	requireLinux(t)
	duration := 10 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("SLUICE_SOAK_DURATION")); err == nil {
		duration = d
	}
	const (
		workers  = 2
		cpuMS    = 5
		overload = 8
		parked   = 10000
		maxRSS   = 150 << 20
	)
	rate := overload * workers * 1000 / cpuMS // requests per second
	s := Start(t, fmt.Sprintf(`server: {listen: {{listen}}, drainDelay: 0s, maxConnections: %d}
admin: {listen: {{admin}}}
`, parked+2000)+DemoWorkers(workers))
	ctx, stop := context.WithTimeout(t.Context(), duration)
	defer stop()

	// The parked connections: open, pinging every 30 s.
	var wg sync.WaitGroup
	var parkedOpen, parkErrs atomic.Int64
	for i := range parked {
		c, err := net.DialTimeout("tcp", s.Addr, bound)
		if err != nil {
			t.Fatalf("parked connection %d: %v", i, err)
		}
		parkedOpen.Add(1)
		wg.Go(func() {
			defer c.Close()
			defer parkedOpen.Add(-1)
			<-time.After(time.Duration(i) * 30 * time.Second / parked) // spread the pings
			tick := time.NewTicker(30 * time.Second)
			defer tick.Stop()
			for {
				if code, _ := RoundTrip(t, c, "GET /ping HTTP/1.1\r\nHost: sluice\r\n\r\n"); code != http.StatusOK {
					parkErrs.Add(1)
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-tick.C:
				}
			}
		})
	}

	// The load: open loop at rate, at most 4,000 requests in flight (one
	// beyond is counted as dropped by the generator, not sent).
	tr := &http.Transport{MaxIdleConnsPerHost: 1000, MaxConnsPerHost: 1000}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var sent, ok, shed, failed, dropped atomic.Int64
	inflight := make(chan struct{}, 4000)
	wg.Go(func() {
		tick := time.NewTicker(time.Second / time.Duration(rate))
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			select {
			case inflight <- struct{}{}:
			default:
				dropped.Add(1)
				continue
			}
			sent.Add(1)
			wg.Go(func() {
				defer func() { <-inflight }()
				resp, err := client.Get(fmt.Sprintf("http://%s/?cpu=%d", s.Addr, cpuMS))
				if err != nil {
					failed.Add(1)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusOK:
					ok.Add(1)
				case http.StatusServiceUnavailable, http.StatusTooManyRequests:
					shed.Add(1)
				default:
					failed.Add(1)
				}
			})
		}
	})

	var report strings.Builder
	fmt.Fprintf(&report, "soak: %v, %d rps offered (%dx two workers' capacity), %d parked connections\n", duration, rate, overload, parked)
	fmt.Fprintf(&report, "%8s %8s %10s %8s %10s %10s %10s %10s\n", "t", "RSS MiB", "goroutines", "conns", "ok", "shed", "failed", "dropped")
	start := time.Now()
	var firstMinute, last int
	var lastRSS int64
	sample := func() {
		m, g, st := s.Memory(t), s.Goroutines(t), s.Stats(t)
		lastRSS, last = m.RSS, g
		if firstMinute == 0 && time.Since(start) >= time.Minute {
			firstMinute = g
		}
		fmt.Fprintf(&report, "%8s %8d %10d %8d %10d %10d %10d %10d\n", time.Since(start).Round(time.Second),
			m.RSS>>20, g, st.Conns.Open, ok.Load(), shed.Load(), failed.Load(), dropped.Load())
	}
	tick := time.NewTicker(30 * time.Second)
	for done := false; !done; {
		select {
		case <-ctx.Done():
			done = true
		case <-tick.C:
			sample()
		}
	}
	tick.Stop()
	sample()
	t.Log(report.String())
	t.Logf("sent %d, ok %d, shed %d, failed %d, dropped by the generator %d; parked still open %d, ping failures %d",
		sent.Load(), ok.Load(), shed.Load(), failed.Load(), dropped.Load(), parkedOpen.Load(), parkErrs.Load())
	if lastRSS > maxRSS {
		t.Errorf("RSS at the end: got %d MiB, want at most %d MiB", lastRSS>>20, maxRSS>>20)
	}
	if firstMinute > 0 && last > firstMinute+firstMinute/10 {
		t.Errorf("goroutines: %d after the first minute, %d at the end: growth", firstMinute, last)
	}
	if n := parkErrs.Load(); n > 0 {
		t.Errorf("%d parked connections lost their ping", n)
	}
	stop()
	tr.CloseIdleConnections()
	wg.Wait()
	s.Stop(t)
}
