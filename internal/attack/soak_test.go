package attack

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// TestSoak is opt-in (SLUICE_SOAK=1; SLUICE_SOAK_DURATION, default 10m):
// sluice in front of two demo workers under 8x their capacity, open loop,
// with 10,000 more connections held open (each pinging every 30 s, so
// keep-alive never closes them), for the whole duration. Every 30 s it
// logs sluice's RSS, Go heap and stacks, goroutines, and connection and
// shed counts; at the end (all connections still open) RSS must be at
// most 150 MB and the goroutines no more than at the end of the first
// minute plus 10% (no growth). SLUICE_SOAK_PROFILE=dir saves sluice's
// heap and goroutine profiles there at the end, for `go tool pprof`. It
// needs 10,500 file descriptors and both cores for itself: run it alone,
// e.g.
//
//	SLUICE_SOAK=1 go test -p 1 -run TestSoak -v -timeout 20m ./internal/attack/
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
		maxRSS   = 150_000_000 // 150 MB (143 MiB): 15 KB for each connection held open
	)
	rate := overload * workers * 1000 / cpuMS // requests per second
	s := Start(t, fmt.Sprintf(`server: {listen: {{listen}}, drainDelay: 0s, maxConnections: %d}
admin: {listen: {{admin}}, pprof: true}
`, parked+2000)+DemoWorkers(workers))
	// The load stops after the last sample, so that it measures sluice
	// with every connection still open.
	ctx, stop := context.WithCancel(t.Context())
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
	fmt.Fprintf(&report, "%8s %8s %8s %9s %10s %8s %8s %10s %10s %8s %8s\n",
		"t", "RSS MiB", "heap MiB", "stack MiB", "goroutines", "conns", "parked", "ok", "shed", "failed", "dropped")
	start := time.Now()
	var firstMinute, last int
	var lastRSS int64
	sample := func() {
		m, g, st, gm := s.Memory(t), s.Goroutines(t), s.Stats(t), s.goMemory(t)
		lastRSS, last = m.RSS, g
		if firstMinute == 0 && time.Since(start) >= time.Minute {
			firstMinute = g
		}
		conns, _ := st.Raw["conns"].(map[string]any)
		parkedNow, _ := conns["parked"].(float64) // outside net/http (server.ConnStats.Parked)
		fmt.Fprintf(&report, "%8s %8d %8d %9d %10d %8d %8d %10d %10d %8d %8d\n", time.Since(start).Round(time.Second),
			m.RSS>>20, gm["go_memstats_heap_inuse_bytes"]>>20, gm["go_memstats_stack_inuse_bytes"]>>20, g,
			st.Conns.Open, int64(parkedNow), ok.Load(), shed.Load(), failed.Load(), dropped.Load())
	}
	tick := time.NewTicker(30 * time.Second)
	end := time.NewTimer(duration)
	for done := false; !done; {
		select {
		case <-end.C:
			done = true
		case <-tick.C:
			sample()
		}
	}
	tick.Stop()
	sample()
	t.Log(report.String())
	if dir := os.Getenv("SLUICE_SOAK_PROFILE"); dir != "" {
		s.saveProfiles(t, dir)
	}
	t.Logf("sent %d, ok %d, shed %d, failed %d, dropped by the generator %d; parked still open %d, ping failures %d",
		sent.Load(), ok.Load(), shed.Load(), failed.Load(), dropped.Load(), parkedOpen.Load(), parkErrs.Load())
	if lastRSS > maxRSS {
		t.Errorf("RSS at the end: got %d MiB, want at most %d MiB (150 MB)", lastRSS>>20, maxRSS>>20)
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

// saveProfiles writes sluice's heap profile (binary, and as text with the
// runtime's MemStats) and goroutine profile into dir, for `go tool pprof`.
func (s *Sluice) saveProfiles(t *testing.T, dir string) {
	t.Helper()
	for file, path := range map[string]string{
		"heap.pb.gz":    "heap",
		"heap.txt":      "heap?debug=1",
		"goroutine.txt": "goroutine?debug=1",
	} {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		code, body := testutil.Get(ctx, "http://"+s.Admin+"/debug/pprof/"+path)
		cancel()
		if code != http.StatusOK {
			t.Errorf("profile %s: got %d", path, code)
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(body), 0o644); err != nil {
			t.Error(err)
		}
	}
}

// goMemory reads the Go runtime's memory gauges (go_memstats_*_bytes) from
// sluice's admin /metrics.
func (s *Sluice) goMemory(t *testing.T) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	code, body := testutil.Get(ctx, "http://"+s.Admin+"/metrics")
	if code != http.StatusOK {
		t.Fatalf("admin /metrics: got %d", code)
	}
	m := map[string]int64{}
	for line := range strings.Lines(body) {
		name, value, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && strings.HasPrefix(name, "go_memstats_") {
			if v, err := strconv.ParseFloat(value, 64); err == nil {
				m[name] = int64(v)
			}
		}
	}
	return m
}
