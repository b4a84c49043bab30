// Command shift runs the library's default limit through workload shifts
// in the sluice binary: `sluice serve` with no workers serves the embedded
// demo app in process behind limit.Auto. It measures the closed-loop
// capacity of a CPU-bound handler (?cpu=10), then alternates, with no
// pause, that handler at 4x its capacity and an I/O-bound one (?sleep=50)
// at 400 requests/s (about 20 in flight), twice, 8 s a phase, and prints
// a Markdown table: every CPU phase must keep 85% of the capacity, every
// I/O phase 95% of its requests, and the time to recover after each shift
// is reported. It exits 1 when a target is missed.
//
//	go run ./internal/eval/cmd/shift                 # about 40 s
//	go run ./internal/eval/cmd/shift -phase 4s -cycles 1
//
// Everything listens on 127.0.0.1; the sluice process is stopped by its
// PID when the run ends.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/eval"
	"github.com/sluicehq/sluice/internal/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// options are the run's settings, from the flags.
type options struct {
	sluice     string
	work       string
	phase      time.Duration
	cycles     int
	cpu, sleep int // ms per request of the two handlers
	mult       float64
	ioRate     float64
	cpuTarget  float64
	ioTarget   float64
	series     bool
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet("shift", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.sluice, "sluice", "", "a sluice binary; by default `go build ./cmd/sluice`")
	fs.StringVar(&o.work, "work", "", "where the config and sluice's log go; by default a temporary directory")
	fs.DurationVar(&o.phase, "phase", 8*time.Second, "length of each phase")
	fs.IntVar(&o.cycles, "cycles", 2, "CPU-bound then I/O-bound phases, this many times")
	fs.IntVar(&o.cpu, "cpu", 10, "ms of CPU per request of the CPU-bound handler")
	fs.IntVar(&o.sleep, "sleep", 50, "ms of waiting per request of the I/O-bound handler")
	fs.Float64Var(&o.mult, "mult", 4, "the CPU-bound phases' load, in multiples of the capacity")
	fs.Float64Var(&o.ioRate, "io-rate", 400, "the I/O-bound phases' load, requests per second")
	fs.Float64Var(&o.cpuTarget, "cpu-target", 0.85, "goodput a CPU-bound phase must keep, as a share of the capacity")
	fs.Float64Var(&o.ioTarget, "io-target", 0.95, "success ratio an I/O-bound phase must keep")
	fs.BoolVar(&o.series, "series", false, "also print each phase's goodput and errors every 250 ms, and the limit, to stderr")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	load := demo.LoadAverage()
	results, capacity, err := measure(ctx, o, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "shift:", err)
		return 1
	}
	if o.series {
		writeSeries(stderr, results)
	}
	fmt.Fprintf(stdout, "load average (1 min) %.1f before the run, %.1f after\n", load, demo.LoadAverage())
	ok := writeTable(stdout, o, capacity, results)
	if !ok {
		fmt.Fprintln(stderr, "shift: a target was missed")
		return 1
	}
	return 0
}

// phaseResult is one phase's figures.
type phaseResult struct {
	cpuBound bool
	report   *loadgen.Report
	limits   []int // /stats's limit every 250 ms
}

func measure(ctx context.Context, o options, stderr io.Writer) ([]phaseResult, float64, error) {
	work := o.work
	if work == "" {
		dir, err := os.MkdirTemp("", "sluice-shift-")
		if err != nil {
			return nil, 0, err
		}
		defer os.RemoveAll(dir)
		work = dir
	}
	bin := o.sluice
	if bin == "" {
		bin = filepath.Join(work, "sluice")
		cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/sluice")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		if err := cmd.Run(); err != nil {
			return nil, 0, fmt.Errorf("building sluice (run from the repository root): %w", err)
		}
	}
	addr, admin := freeAddr(), freeAddr()
	if addr == "" || admin == "" {
		return nil, 0, fmt.Errorf("no free port on 127.0.0.1")
	}
	cfg := filepath.Join(work, "sluice.yaml")
	yaml := fmt.Sprintf("server:\n  listen: %q\n  drainDelay: 0s\nadmin: {listen: %q, pprof: false}\n", addr, admin)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		return nil, 0, err
	}
	p, err := eval.StartProcess("sluice", filepath.Join(work, "sluice.log"), []string{"GOMAXPROCS=2"}, bin, "serve", "-c", cfg)
	if err != nil {
		return nil, 0, err
	}
	defer p.Stop(5 * time.Second)
	wait, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := eval.WaitHTTP(wait, "http://"+addr+"/__sluice/ready"); err != nil {
		return nil, 0, err
	}

	cpuURL := fmt.Sprintf("http://%s/?cpu=%d", addr, o.cpu)
	ioURL := fmt.Sprintf("http://%s/?cpu=0&sleep=%d", addr, o.sleep)
	c, err := eval.Capacity(ctx, []string{cpuURL}, 4, 3*time.Second, false)
	if err != nil {
		return nil, 0, err
	}
	if c.Rate <= 0 {
		return nil, 0, fmt.Errorf("capacity: nothing succeeded (%d errors)", c.Errors)
	}
	fmt.Fprintf(stderr, "shift: capacity %.0f/s (closed loop, 4 clients, ?cpu=%d)\n", c.Rate, o.cpu)

	// Each phase is its own loadgen run, started on the previous one's
	// schedule end, not after its drain: the load shifts with no pause,
	// and the last requests of a phase are still answered while the next
	// one's arrive.
	var results []phaseResult
	for range o.cycles {
		results = append(results, phaseResult{cpuBound: true}, phaseResult{cpuBound: false})
	}
	start := time.Now()
	stopPoll := pollLimit(ctx, "http://"+admin+"/stats")
	errs := make([]error, len(results))
	var wg sync.WaitGroup
	for i := range results {
		r := &results[i]
		url, rate := ioURL, o.ioRate
		if r.cpuBound {
			url, rate = cpuURL, o.mult*c.Rate
		}
		wg.Go(func() {
			select {
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			case <-time.After(time.Until(start.Add(time.Duration(i) * o.phase))):
			}
			r.report, errs[i] = loadgen.Run(ctx, loadgen.Config{
				URL:          url,
				Phases:       []loadgen.Phase{{Rate: rate, Duration: o.phase}},
				Timeout:      time.Second,
				Seed:         uint64(i + 1),
				Bucket:       250 * time.Millisecond,
				LoopbackOnly: true,
			})
		})
	}
	wg.Wait()
	for _, s := range stopPoll() {
		if i := int(s.at.Sub(start) / o.phase); i < len(results) {
			results[i].limits = append(results[i].limits, s.limit)
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, 0, err
		}
	}
	return results, c.Rate, nil
}

// limitSample is the limit /stats reported at a time.
type limitSample struct {
	at    time.Time
	limit int
}

// pollLimit reads the limit from url (the admin /stats) every 250 ms until
// the returned func is called, which returns the readings.
func pollLimit(ctx context.Context, url string) (stop func() []limitSample) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var samples []limitSample
	client := &http.Client{Timeout: time.Second}
	wg.Go(func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if l, ok := readLimit(ctx, client, url); ok {
				samples = append(samples, limitSample{time.Now(), l})
			}
		}
	})
	return func() []limitSample { cancel(); wg.Wait(); return samples }
}

func readLimit(ctx context.Context, c *http.Client, url string) (int, bool) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var st struct {
		Admission struct {
			Limit int `json:"limit"`
		} `json:"admission"`
	}
	if json.NewDecoder(resp.Body).Decode(&st) != nil || st.Admission.Limit == 0 {
		return 0, false
	}
	return st.Admission.Limit, true
}

func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer ln.Close()
	return ln.Addr().String()
}

// recoveredAfter is the start of the first point of series from which the
// one-second moving mean of the value stays at or above threshold to the
// end of the series' last full second; ok is false when none does.
func recoveredAfter(series []loadgen.Point, bucket time.Duration, value func(loadgen.Point) float64, threshold float64) (time.Duration, bool) {
	n := max(1, int(time.Second/bucket))
	last := len(series) - n // the last point with a full second after it
	if last < 0 {
		return 0, false
	}
	at, ok := time.Duration(0), false
	for i := last; i >= 0; i-- {
		var sum float64
		for _, p := range series[i : i+n] {
			sum += value(p)
		}
		if sum/float64(n) < threshold {
			break
		}
		at, ok = series[i].Start, true
	}
	return at, ok
}

// writeTable writes the results as Markdown and reports whether every
// phase met its target.
func writeTable(w io.Writer, o options, capacity float64, results []phaseResult) bool {
	fmt.Fprintf(w, "capacity of ?cpu=%d: %.0f/s (closed loop, 4 clients); phases of %v, no pause\n\n", o.cpu, capacity, o.phase)
	fmt.Fprintln(w, "| phase | offered | goodput | target | p50 | p99 | recovered after | limit (min-max) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	allOK := true
	for i, r := range results {
		t := r.report.Total
		var name, got, target string
		var met bool
		var at time.Duration
		var recovered bool
		if r.cpuBound {
			share := t.Goodput / capacity
			name = fmt.Sprintf("%d. CPU ?cpu=%d at %.0fx", i+1, o.cpu, o.mult)
			got = fmt.Sprintf("%.0f/s (%.0f%% of capacity)", t.Goodput, 100*share)
			target = fmt.Sprintf(">= %.0f%% of capacity", 100*o.cpuTarget)
			met = share >= o.cpuTarget
			at, recovered = recoveredAfter(r.report.Series, r.report.Bucket,
				func(p loadgen.Point) float64 { return p.Goodput }, o.cpuTarget*capacity)
		} else {
			name = fmt.Sprintf("%d. I/O ?sleep=%d at %.0f/s", i+1, o.sleep, o.ioRate)
			got = fmt.Sprintf("%.0f/s (%.1f%% success)", t.Goodput, 100*t.SuccessRatio)
			target = fmt.Sprintf(">= %.0f%% success", 100*o.ioTarget)
			met = t.SuccessRatio >= o.ioTarget
			at, recovered = recoveredAfter(r.report.Series, r.report.Bucket,
				func(p loadgen.Point) float64 { return p.Goodput }, o.ioTarget*o.ioRate)
		}
		rec := "not within the phase"
		switch {
		case i == 0:
			rec = "(first phase)"
		case recovered:
			rec = at.String()
		}
		if !met {
			allOK = false
			target += " **missed**"
		}
		lo, hi := math.MaxInt, 0
		for _, l := range r.limits {
			lo, hi = min(lo, l), max(hi, l)
		}
		limits := "-"
		if hi > 0 {
			limits = fmt.Sprintf("%d-%d", lo, hi)
		}
		fmt.Fprintf(w, "| %s | %.0f/s | %s | %s | %v | %v | %s | %s |\n", name, t.OfferedRate, got, target,
			t.Latency.P50.Round(time.Millisecond), t.Latency.P99.Round(time.Millisecond), rec, limits)
	}
	if errs := errorSummary(results); errs != "" {
		fmt.Fprintf(w, "\nerrors: %s\n", errs)
	}
	return allOK
}

// errorSummary lists each phase's errors by kind.
func errorSummary(results []phaseResult) string {
	var parts []string
	for i, r := range results {
		if len(r.report.Total.Errors) == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("phase %d %v", i+1, r.report.Total.Errors))
	}
	return strings.Join(parts, "; ")
}

// writeSeries prints each phase's time series: goodput/errors per second
// every bucket, and the limit /stats reported.
func writeSeries(w io.Writer, results []phaseResult) {
	for i, r := range results {
		fmt.Fprintf(w, "phase %d goodput/errors:", i+1)
		for _, p := range r.report.Series {
			fmt.Fprintf(w, " %.0f/%.0f", p.Goodput, p.Errors)
		}
		fmt.Fprintf(w, "\nphase %d limit: %v\n", i+1, r.limits)
	}
}
