package eval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Scenario hypernova: the real Hypernova (Airbnb's server-side rendering
// service, npm hypernova 2.5.0) as the worker, rendering a React 19 page
// of about 80 KB for each POST /batch job, in the three setups the seed
// compares: Hypernova's own cluster coordinator (one worker per CPU, the
// seed's "before"), nginx -> HAProxy as the seed ran it (leastconn,
// maxconn 1, a 500 ms queue, health checks, redispatch), and sluice with
// its defaults; at the same absolute rates, and through a rolling restart
// under load.
const ScenarioHypernova = "hypernova"

// DefaultHypernovaWorker is scenario hypernova's worker script, relative
// to the repository root.
const DefaultHypernovaWorker = "internal/eval/hypernova/worker.js"

// HypernovaItems is the listing cards of the page each job asks for: 23
// make a batch answer of about 80 KB. Options.HypernovaItems changes it.
const HypernovaItems = 23

// hypernovaPageNumber is the page of results every job asks for: the same
// page each time, as the suite's other workloads render one page.
const hypernovaPageNumber = 7

// hypernovaPath is Hypernova's batch endpoint, relative to a base URL.
const hypernovaPath = "batch"

// hypernovaToken is the token of the one job of each batch.
const hypernovaToken = "page"

const jsonType = "application/json"

// SetupHypernovaCoordinator is Hypernova's own cluster coordinator: one
// process that forks a worker per CPU sharing its port, no front.
const SetupHypernovaCoordinator = "hypernova-coordinator"

// HypernovaSetups lists scenario hypernova's setups in table order.
func HypernovaSetups() []string {
	return []string{SetupHypernovaCoordinator, SetupNginxHA500ms, SetupSluice}
}

// HypernovaMultiples are scenario hypernova's offered loads, in
// capacities: the closed-loop throughput measured straight to the
// workers.
func HypernovaMultiples() []float64 { return []float64{1, 2, 4} }

// HypernovaRestartMultiple is the offered load, in capacities, during the
// rolling restart.
const HypernovaRestartMultiple = 0.7

// HypernovaCheckInterval is the HAProxy health checks' interval.
const HypernovaCheckInterval = time.Second

// HypernovaJob returns the body of a POST /batch with one job, token
// "page", for component Page: page of results page with items cards.
func HypernovaJob(page, items int) []byte {
	type props struct {
		Page  int `json:"page"`
		Items int `json:"items"`
	}
	type job struct {
		Name string `json:"name"`
		Data props  `json:"data"`
	}
	b, err := json.Marshal(map[string]job{hypernovaToken: {Name: "Page", Data: props{page, items}}})
	if err != nil {
		panic(err) // two ints and a constant string always marshal
	}
	return b
}

// hypernovaCheck is HAProxy's health check of a Hypernova worker: a
// one-card job.
func hypernovaCheck() *HTTPCheck {
	return &HTTPCheck{Method: "POST", Path: "/" + hypernovaPath, Body: string(HypernovaJob(1, 1)), ContentType: jsonType,
		Interval: HypernovaCheckInterval}
}

// ParseBatch returns the HTML Hypernova rendered for job token in a batch
// answer, or an error saying why there is none: the answer is not a
// batch, the job is missing, or it failed (an unknown component, a
// render that threw).
func ParseBatch(b []byte, token string) (string, error) {
	var res struct {
		Success bool                       `json:"success"`
		Results map[string]json.RawMessage `json:"results"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		return "", fmt.Errorf("eval: a Hypernova batch answer: %w", err)
	}
	raw, ok := res.Results[token]
	if !ok {
		return "", fmt.Errorf("eval: a Hypernova batch answer without job %q", token)
	}
	var job struct {
		HTML       *string         `json:"html"`
		Success    bool            `json:"success"`
		StatusCode int             `json:"statusCode"`
		Error      json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(raw, &job); err != nil {
		return "", fmt.Errorf("eval: Hypernova job %q: %w", token, err)
	}
	if !res.Success || !job.Success || job.HTML == nil {
		msg := string(job.Error)
		var e struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(job.Error, &e) == nil && e.Message != "" {
			msg = e.Message
		}
		return "", fmt.Errorf("eval: Hypernova job %q failed (status %d): %s", token, job.StatusCode, msg)
	}
	return *job.HTML, nil
}

// errLogWait is returned by waitLog when the bound ran out first.
var errLogWait = errors.New("eval: the log line did not come")

// waitLog polls r (a log file, read from where the caller left it) every
// poll until a line holding one of wants appears, or bound passes; it
// returns the line.
func waitLog(ctx context.Context, r io.Reader, wants []string, poll, bound time.Duration) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var pending []byte
	buf := make([]byte, 32<<10)
	for {
		for {
			n, err := r.Read(buf)
			pending = append(pending, buf[:n]...)
			for {
				line, rest, ok := strings.Cut(string(pending), "\n")
				if !ok {
					break
				}
				pending = []byte(rest)
				for _, w := range wants {
					if strings.Contains(line, w) {
						return line, nil
					}
				}
			}
			if n == 0 || err != nil {
				break
			}
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w within %v (wanted %q)", errLogWait, bound, wants)
		case <-tick.C:
		}
	}
}

// waitCPUIdle waits until cpu (a CPU time that only grows) advances by
// less than share of one core over a poll, or bound passes: the renderers
// have finished what an earlier run left them. It returns how long it
// waited; the error wraps ErrStillBusy when bound ran out, or is ctx's.
func waitCPUIdle(ctx context.Context, cpu func() time.Duration, share float64, poll, bound time.Duration) (time.Duration, error) {
	start := time.Now()
	bctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	prev, at := cpu(), time.Now()
	for {
		select {
		case <-bctx.Done():
			if ctx.Err() != nil {
				return time.Since(start), ctx.Err()
			}
			return time.Since(start), fmt.Errorf("eval: waiting %v for idle renderers: %w", bound, ErrStillBusy)
		case <-tick.C:
		}
		now, t := cpu(), time.Now()
		if el := t.Sub(at); el > 0 && float64(now-prev) < share*float64(el) {
			return time.Since(start), nil
		}
		prev, at = now, t
	}
}

// HypernovaInfo records scenario hypernova as it was run.
type HypernovaInfo struct {
	Worker  string `json:"worker"` // the script, as started
	Node    string `json:"node"`   // node --version
	Job     string `json:"job"`    // the body of every POST /batch
	Workers int    `json:"workers"`
	// AnswerBytes is the size of one batch answer.
	AnswerBytes int `json:"answer_bytes"`
	// Capacity is what the workers served closed-loop, straight, with
	// CapacityClients clients each, NodeCapacityRuns times; CapacityRPS is
	// the highest.
	Capacity    []float64 `json:"capacity_rps_runs"`
	CapacityRPS float64   `json:"capacity_rps"`
	// Restart says how each setup's rolling restart was done (or why not).
	Restart map[string]string `json:"restart"`
}

// hypernovaFile is scenario hypernova's JSON file.
type hypernovaFile struct {
	Scenario    string        `json:"scenario"`
	Environment Environment   `json:"environment"`
	Info        HypernovaInfo `json:"info"`
	Runs        []*RunResult  `json:"runs"`
}

// restartPoint is the point name of a rolling-restart run, and
// restartBaseline that of the same load without a restart.
var (
	restartPoint    = "restart " + multipleName(HypernovaRestartMultiple)
	restartBaseline = "no restart " + multipleName(HypernovaRestartMultiple)
)

// HypernovaMarkdown writes scenario hypernova's table: per setup the
// goodput (and success share) at each load, the p99 of successes, and the
// requests lost (anything but a success) over a load during which the
// workers were restarted one at a time, beside those lost over the same
// load without a restart, and the CPU the rest of the machine took during
// each run (the noise); then sluice's figures over nginx -> HAProxy's.
func HypernovaMarkdown(info HypernovaInfo, runs []*RunResult) string {
	findAll := func(setup, point string) []*RunResult {
		var rs []*RunResult
		for _, r := range runs {
			if r.Setup == setup && r.Point == point && len(r.Reports) > 0 {
				rs = append(rs, r)
			}
		}
		return rs
	}
	find := func(setup, point string) *RunResult {
		if rs := findAll(setup, point); len(rs) > 0 {
			return rs[0]
		}
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Capacity (closed loop, straight to the %d workers): %.1f/s. Goodput: 200s within the 1 s client timeout, per second (success share); p99 of successes.\n\n",
		info.Workers, info.CapacityRPS)
	b.WriteString("| setup |")
	for _, m := range HypernovaMultiples() {
		fmt.Fprintf(&b, " %s |", multipleName(m))
	}
	b.WriteString(" p99 " + joinMultiples(HypernovaMultiples()) + " | lost during a rolling restart at " + multipleName(HypernovaRestartMultiple) +
		" | other load, cores: " + joinMultiples(HypernovaMultiples()) + ", restart |\n|---|")
	b.WriteString(strings.Repeat("---|", len(HypernovaMultiples())+3) + "\n")
	for _, setup := range HypernovaSetups() {
		fmt.Fprintf(&b, "| %s |", setup)
		var p99s, others []string
		for _, m := range HypernovaMultiples() {
			r := find(setup, multipleName(m))
			if r == nil {
				b.WriteString(" — |")
				p99s, others = append(p99s, "—"), append(others, "—")
				continue
			}
			t := r.Reports[0].Total
			fmt.Fprintf(&b, " %.1f/s (%.1f%%) |", t.Goodput, 100*t.SuccessRatio)
			p99s = append(p99s, p99Cell(t.Successes, t.Latency.P99))
			others = append(others, fmt.Sprintf("%.2f", r.OtherCores()))
		}
		fmt.Fprintf(&b, " %s |", strings.Join(p99s, ", "))
		if rs := findAll(setup, restartPoint); len(rs) > 0 {
			b.WriteString(" " + lossCell(rs))
			if bs := findAll(setup, restartBaseline); len(bs) > 0 {
				b.WriteString(" (" + lossCell(bs) + " without)")
			}
			b.WriteString(" |")
			most := 0.0
			for _, r := range rs {
				most = max(most, r.OtherCores())
			}
			others = append(others, fmt.Sprintf("%.2f", most))
		} else {
			b.WriteString(" n/a |")
			others = append(others, "—")
		}
		fmt.Fprintf(&b, " %s |\n", strings.Join(others, ", "))
	}
	b.WriteString("| sluice / HAProxy |")
	var p99s []string
	for _, m := range HypernovaMultiples() {
		s, h := find(SetupSluice, multipleName(m)), find(SetupNginxHA500ms, multipleName(m))
		if s == nil || h == nil {
			b.WriteString(" — |")
			p99s = append(p99s, "—")
			continue
		}
		st, ht := s.Reports[0].Total, h.Reports[0].Total
		fmt.Fprintf(&b, " %s |", ratioCell(st.Goodput, ht.Goodput))
		if st.Successes == 0 || ht.Successes == 0 {
			p99s = append(p99s, "—")
		} else {
			p99s = append(p99s, ratioCell(float64(st.Latency.P99), float64(ht.Latency.P99)))
		}
	}
	fmt.Fprintf(&b, " %s | | |\n", strings.Join(p99s, ", "))
	b.WriteString("\nRolling restarts:\n\n")
	for _, setup := range HypernovaSetups() {
		if how, ok := info.Restart[setup]; ok {
			fmt.Fprintf(&b, "- %s: %s\n", setup, how)
		}
	}
	return b.String()
}

// lossCell is the share of requests the runs lost (anything but a
// success): one run's, or the median of several with their range (the
// rounds of Options.RestartRounds; the median of an even count is the
// mean of the middle two).
func lossCell(runs []*RunResult) string {
	loss := make([]float64, len(runs))
	for i, r := range runs {
		loss[i] = 100 * (1 - r.Reports[0].Total.SuccessRatio)
	}
	if len(loss) == 1 {
		return fmt.Sprintf("%.1f%%", loss[0])
	}
	return fmt.Sprintf("%.1f%% median of %d (%.1f-%.1f%%)", Median(loss), len(loss), slices.Min(loss), slices.Max(loss))
}

func joinMultiples(ms []float64) string {
	var s []string
	for _, m := range ms {
		s = append(s, multipleName(m))
	}
	return strings.Join(s, ", ")
}

func p99Cell(successes int64, p99 time.Duration) string {
	if successes == 0 {
		return "—"
	}
	return strconv.FormatInt(p99.Milliseconds(), 10) + " ms"
}

func ratioCell(a, b float64) string {
	if b <= 0 {
		return "—"
	}
	return fmt.Sprintf("%.2fx", a/b)
}
