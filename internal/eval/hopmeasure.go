package eval

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// HopPoint is one measurement of scenario hop-cpu: one front, one round,
// one way of loading it.
type HopPoint struct {
	Setup  string `json:"setup"`
	Round  int    `json:"round"`
	Body   string `json:"body"`   // json, html; spin for the overload
	Client string `json:"client"` // h1, h2
	// Mode is "fixed" (HopCPURate, open loop), "closed" (HopCPUClients
	// clients) or "overload" (Multiple times the spinning workers'
	// capacity, open loop).
	Mode     string  `json:"mode"`
	Multiple float64 `json:"multiple,omitempty"`
	Offered  float64 `json:"offered_rps,omitempty"`
	// Successes are 2xx answers; Shed are 503 and 429 answers; Errors the
	// rest (timeouts, connection errors, other statuses).
	Successes int64   `json:"successes"`
	Shed      int64   `json:"shed"`
	Errors    int64   `json:"errors"`
	Rate      float64 `json:"rate_rps"` // successes per second
	// Kinds counts the load generator's failed answers by kind.
	Kinds map[string]int64 `json:"error_kinds,omitempty"`
	// FrontCPU is the CPU time the front's processes used, seconds; Wall
	// the measurement's length. Others is what the rest of the machine
	// used meanwhile, in cores (its busy time less the suite's processes):
	// the noise.
	FrontCPU float64 `json:"front_cpu_s"`
	Wall     float64 `json:"wall_s"`
	Others   float64 `json:"others_cores"`
}

// CPUPer1000 is the front's CPU per 1,000 answered requests (successes
// and sheds), ms.
func (p HopPoint) CPUPer1000() float64 {
	n := p.Successes + p.Shed
	if n == 0 {
		return 0
	}
	return p.FrontCPU * 1e6 / float64(n)
}

// Share is the front's CPU over the wall time: the cores it took.
func (p HopPoint) Share() float64 {
	if p.Wall <= 0 {
		return 0
	}
	return p.FrontCPU / p.Wall
}

// cpuMeter reads, over one measurement, the front's CPU and the rest of
// the machine's.
type cpuMeter struct {
	s            *Suite
	front        *Front
	front0, own0 time.Duration
	all0         time.Duration
	start        time.Time
}

func (s *Suite) meter(f *Front) *cpuMeter {
	return &cpuMeter{s: s, front: f, front0: f.CPUTime(), own0: s.ownCPUTime(), all0: MachineCPUTime(), start: time.Now()}
}

// stop fills p's FrontCPU, Wall and Others.
func (m *cpuMeter) stop(p *HopPoint) {
	wall := time.Since(m.start)
	front := m.front.CPUTime() - m.front0
	others := (MachineCPUTime() - m.all0) - (m.s.ownCPUTime() - m.own0)
	p.FrontCPU, p.Wall = front.Seconds(), wall.Seconds()
	p.Others = max(0, others.Seconds()/wall.Seconds())
}

// hopOpenLoop offers rate requests per second to url for d, open loop
// (a late answer does not delay the next send), over tr (see
// hopTransport; the suite's URLs are all 127.0.0.1).
func hopOpenLoop(ctx context.Context, url string, rate float64, d time.Duration, tr http.RoundTripper) (*loadgen.Report, error) {
	return loadgen.Run(ctx, loadgen.Config{
		URL:       url,
		Phases:    []loadgen.Phase{{Name: "hop", Rate: rate, Duration: d}},
		Transport: tr,
	})
}

// fillFromReport counts a load generator's answers into p.
func fillFromReport(p *HopPoint, rep *loadgen.Report) {
	t := rep.Total
	p.Successes = t.Successes
	p.Kinds = t.Errors
	for kind, n := range t.Errors {
		if isShedKind(kind) {
			p.Shed += n
		} else {
			p.Errors += n
		}
	}
	if rep.Elapsed > 0 {
		p.Rate = float64(t.Successes) / rep.Elapsed.Seconds()
	}
}

// isShedKind reports whether a load generator's error kind is a refusal
// by the front (503 or 429, with or without a Sluice-Shed reason).
func isShedKind(kind string) bool {
	return len(kind) >= 3 && (kind[:3] == "503" || kind[:3] == "429")
}

// closedResult is what hopClosedLoop counted.
type closedResult struct {
	successes, errors int64
	elapsed           time.Duration
}

// hopClosedLoop runs clients clients against url for d over tr, each
// sending its next request as soon as the last is answered.
func hopClosedLoop(ctx context.Context, url string, clients int, d time.Duration, tr http.RoundTripper) closedResult {
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var ok, failed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				status, err := get(ctx, c, url, io.Discard)
				switch {
				case ctx.Err() != nil: // cut by the end: not counted
				case err == nil && status/100 == 2:
					ok.Add(1)
				default:
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return closedResult{successes: ok.Load(), errors: failed.Load(), elapsed: time.Since(start)}
}
