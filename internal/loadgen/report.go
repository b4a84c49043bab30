package loadgen

import (
	"encoding/json"
	"io"
	"maps"
	"time"
)

// Report is what a run offered and what came back. Every figure is
// attributed to the scheduled send time of its logical request: a request
// sent in phase 2 and answered in phase 3 counts in phase 2, so that each
// phase's success ratio compares like with like. Durations are
// nanoseconds in JSON (fields ending _ns); rates are per second.
type Report struct {
	URL         string        `json:"url"`
	Started     time.Time     `json:"started"`
	Elapsed     time.Duration `json:"elapsed_ns"` // wall time, drain included
	Interrupted bool          `json:"interrupted,omitempty"`
	Settings    Settings      `json:"settings"`
	Phases      []PhaseReport `json:"phases"`
	Total       Stats         `json:"total"`
	// Classes break the totals down by each header-mix and query-mix
	// value, in the order configured: "Sluice-Tenant=a", "query=cpu=5".
	Classes []ClassReport `json:"classes,omitempty"`
	Bucket  time.Duration `json:"bucket_ns"`
	Series  []Point       `json:"series"`
}

// Settings records the client behaviour the figures depend on.
type Settings struct {
	Timeout        time.Duration `json:"timeout_ns"`
	MaxOutstanding int           `json:"max_outstanding"`
	KeepAlive      bool          `json:"keepalive"`
	Method         string        `json:"method"`
	Retry          string        `json:"retry"`
	MaxAttempts    int           `json:"max_attempts"`
	Seed           uint64        `json:"seed"`
}

// PhaseReport is one phase's figures.
type PhaseReport struct {
	Name  string        `json:"name"`
	Phase Phase         `json:"phase"`
	Start time.Duration `json:"start_ns"` // from the run's start
	Stats Stats         `json:"stats"`
}

// ClassReport is the figures for the requests that drew one mix value.
type ClassReport struct {
	Name  string `json:"name"`
	Stats Stats  `json:"stats"`
}

// Stats summarises the logical requests scheduled in a span of time.
type Stats struct {
	// Duration is the span the rates are computed over.
	Duration time.Duration `json:"duration_ns"`
	// Requests counts logical requests scheduled, dropped ones included.
	Requests int64 `json:"requests"`
	// Attempts counts what was sent, retries included.
	Attempts int64 `json:"attempts"`
	// Successes counts logical requests of which some attempt got a 2xx
	// or 3xx response within its timeout.
	Successes int64 `json:"successes"`
	// Failures counts logical requests sent that never succeeded.
	Failures int64 `json:"failures"`

	OfferedRate  float64 `json:"offered_rps"`   // Requests per second
	AttemptRate  float64 `json:"attempts_rps"`  // Attempts per second
	Goodput      float64 `json:"goodput_rps"`   // Successes per second
	SuccessRatio float64 `json:"success_ratio"` // Successes / Requests; 0 when none
	// Delivered is the successes whose response ended within the window,
	// whenever they were sent, per second of it: the rate the server
	// answered at. Goodput counts the successes of the requests sent in
	// the window, some of which a queue answers after it ends; a front
	// that queues 500 ms adds half a second's answers to a short phase's
	// Goodput, and nothing to its Delivered. Zero for a class (classes
	// have no window of their own) and for a time-series bucket.
	Delivered float64 `json:"delivered_rps"`
	// Latency is of successes, from scheduled send to the response's end.
	Latency Latency `json:"latency"`
	// Errors counts each failed attempt by kind: "503:<Sluice-Shed
	// reason>", "503" without one, "429", other status codes, "timeout",
	// "conn-error", "canceled", "not-loopback"; plus "generator-dropped"
	// for logical requests never sent.
	Errors map[string]int64 `json:"errors,omitempty"`
}

// Latency summarises a latency distribution.
type Latency struct {
	P50  time.Duration `json:"p50_ns"`
	P90  time.Duration `json:"p90_ns"`
	P99  time.Duration `json:"p99_ns"`
	Max  time.Duration `json:"max_ns"`
	Mean time.Duration `json:"mean_ns"`
}

// Point is one time-series bucket, for charts.
type Point struct {
	Start    time.Duration `json:"start_ns"` // from the run's start
	Offered  float64       `json:"offered_rps"`
	Attempts float64       `json:"attempts_rps"`
	Goodput  float64       `json:"goodput_rps"`
	Errors   float64       `json:"errors_rps"` // failed attempts and drops
	P50      time.Duration `json:"p50_ns"`     // zero when nothing succeeded
	P99      time.Duration `json:"p99_ns"`
}

// WriteJSON writes r as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func (g *generator) report(rec *recorder, start time.Time, elapsed, schedEnd time.Duration) *Report {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	cfg := g.cfg
	r := &Report{
		URL:     cfg.URL,
		Started: start,
		Elapsed: elapsed,
		Settings: Settings{
			Timeout:        cfg.Timeout,
			MaxOutstanding: cfg.MaxOutstanding,
			KeepAlive:      !cfg.DisableKeepAlives,
			Method:         cfg.Method,
			Retry:          cfg.Retry.String(),
			MaxAttempts:    cfg.MaxAttempts,
			Seed:           cfg.Seed,
		},
		Total:  rec.mu.total.stats(schedEnd),
		Bucket: cfg.Bucket,
	}
	starts := phaseStarts(cfg.Phases)
	for i, p := range cfg.Phases {
		d := min(max(schedEnd-starts[i], 0), p.Duration)
		r.Phases = append(r.Phases, PhaseReport{
			Name:  p.label(),
			Phase: p,
			Start: starts[i],
			Stats: rec.mu.phases[i].stats(d),
		})
	}
	for i, name := range g.classes {
		r.Classes = append(r.Classes, ClassReport{Name: name, Stats: rec.mu.classes[i].stats(schedEnd)})
	}
	r.Series = make([]Point, 0, len(rec.mu.series))
	for i := range rec.mu.series {
		at := time.Duration(i) * cfg.Bucket
		if at >= schedEnd {
			break
		}
		s := rec.mu.series[i].stats(min(cfg.Bucket, schedEnd-at))
		r.Series = append(r.Series, Point{
			Start:    at,
			Offered:  s.OfferedRate,
			Attempts: s.AttemptRate,
			Goodput:  s.Goodput,
			Errors:   float64(rec.mu.series[i].errorCount()) / s.Duration.Seconds(),
			P50:      s.Latency.P50,
			P99:      s.Latency.P99,
		})
	}
	// Buckets in which nothing was due still belong on the chart.
	for at := time.Duration(len(r.Series)) * cfg.Bucket; at < schedEnd; at += cfg.Bucket {
		r.Series = append(r.Series, Point{Start: at})
	}
	return r
}

func (t *tally) stats(d time.Duration) Stats {
	s := Stats{
		Duration:  d,
		Requests:  t.requests,
		Attempts:  t.attempts,
		Successes: t.successes,
		Failures:  t.failures,
		Latency: Latency{
			P50:  t.hist.Quantile(0.50),
			P90:  t.hist.Quantile(0.90),
			P99:  t.hist.Quantile(0.99),
			Max:  t.hist.Max(),
			Mean: t.hist.Mean(),
		},
	}
	if len(t.errors) > 0 {
		s.Errors = maps.Clone(t.errors)
	}
	if secs := d.Seconds(); secs > 0 {
		s.OfferedRate = float64(t.requests) / secs
		s.AttemptRate = float64(t.attempts) / secs
		s.Goodput = float64(t.successes) / secs
		s.Delivered = float64(t.delivered) / secs
	}
	if t.requests > 0 {
		s.SuccessRatio = float64(t.successes) / float64(t.requests)
	}
	return s
}
