package loadgen

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// ErrNotLoopback is returned by a dial that LoopbackOnly refused.
var ErrNotLoopback = errors.New("loadgen: refusing a non-loopback address")

// Run offers the load cfg describes to cfg.URL and reports what came back.
//
// Sends follow the phases' schedule open-loop: each logical request is
// launched at its scheduled time in its own goroutine, whether or not
// earlier ones have been answered, and its latency counts from that
// scheduled time, so a slow server cannot slow the offered load or hide
// its queueing (no coordinated omission). When MaxOutstanding requests are
// in flight a due send is counted as generator-dropped instead.
//
// Run blocks until the last phase has ended and every request in flight has
// finished, which takes at most MaxAttempts times (Timeout plus
// BackoffMax) past the schedule. An invalid cfg returns an error wrapping
// ErrConfig and no report. If ctx is cancelled, Run stops sending, aborts
// the requests in flight and returns the report so far, marked
// Interrupted, with an error wrapping ctx.Err().
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	g, err := newGenerator(cfg)
	if err != nil {
		return nil, err
	}
	return g.run(ctx)
}

// generator holds what one run needs; it lives for one call of Run.
type generator struct {
	cfg     Config
	rt      http.RoundTripper
	policy  retryPolicy
	urls    []string  // the target with each QueryMix value applied
	host    string    // from a Host entry in cfg.Header
	mixes   []Chooser // the header mixes in order, then QueryMix if any
	classes []string  // one per mix value: mix i's value j is classes[base[i]+j]
	base    []int
}

func newGenerator(cfg Config) (*generator, error) {
	g := &generator{
		cfg: cfg,
		policy: retryPolicy{
			mode:        cfg.Retry,
			maxAttempts: cfg.MaxAttempts,
			base:        cfg.BackoffBase,
			maxWait:     cfg.BackoffMax,
		},
		host: cfg.Header.Get("Host"),
	}
	for _, m := range cfg.HeaderMixes {
		g.base = append(g.base, len(g.classes))
		g.mixes = append(g.mixes, NewChooser(m.Values))
		for _, v := range m.Values {
			g.classes = append(g.classes, http.CanonicalHeaderKey(m.Name)+"="+v.Value)
		}
	}
	target, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("loadgen: %w", err)
	}
	if len(cfg.QueryMix) == 0 {
		g.urls = []string{target.String()}
	} else {
		g.base = append(g.base, len(g.classes))
		g.mixes = append(g.mixes, NewChooser(cfg.QueryMix))
		for _, q := range cfg.QueryMix {
			u := *target
			if u.RawQuery != "" && q.Value != "" {
				u.RawQuery += "&"
			}
			u.RawQuery += q.Value
			g.urls = append(g.urls, u.String())
			g.classes = append(g.classes, "query="+q.Value)
		}
	}
	if cfg.LoopbackOnly {
		if ip := net.ParseIP(target.Hostname()); ip != nil && !ip.IsLoopback() {
			return nil, fmt.Errorf("%w: %s", ErrNotLoopback, target.Host)
		}
	}
	g.rt = cfg.Transport
	if g.rt == nil {
		g.rt = newTransport(cfg)
	}
	return g, nil
}

func newTransport(cfg Config) *http.Transport {
	d := &net.Dialer{Timeout: cfg.Timeout, KeepAlive: 30 * time.Second}
	if cfg.LoopbackOnly {
		d.Control = func(_, address string, _ syscall.RawConn) error {
			host, _, err := net.SplitHostPort(address)
			if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
				return fmt.Errorf("%w: %s", ErrNotLoopback, address)
			}
			return nil
		}
	}
	return &http.Transport{
		Proxy:             nil, // load goes straight to the target
		DialContext:       d.DialContext,
		DisableKeepAlives: cfg.DisableKeepAlives,
		// No implicit Accept-Encoding: gzip. Fronts are compared on the same
		// bytes (sluice compresses by default, the evaluation suite's nginx
		// does not); -H "Accept-Encoding: gzip" asks for compression explicitly.
		DisableCompression:  true,
		MaxIdleConns:        cfg.MaxOutstanding,
		MaxIdleConnsPerHost: cfg.MaxOutstanding,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: cfg.Timeout,
		ForceAttemptHTTP2:   true,
	}
}

// spec is what one logical request sends, drawn from the mixes.
type spec struct {
	url     string
	header  http.Header // shared read-only by the request's attempts
	classes []int
	seed    uint64 // for this request's jitter
}

func (g *generator) run(parent context.Context) (*Report, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	if t, ok := g.rt.(*http.Transport); ok && g.cfg.Transport == nil {
		defer t.CloseIdleConnections()
	}

	rec := newRecorder(phaseStarts(g.cfg.Phases), len(g.classes), g.cfg.Bucket)
	var (
		wg          sync.WaitGroup
		outstanding atomic.Int64
	)
	start := time.Now()
	stopProgress := g.startProgress(ctx, rec, &outstanding, start)

	schedEnd := plannedDuration(g.cfg.Phases)
	interrupted := !g.send(ctx, start, rec, &wg, &outstanding)
	if interrupted {
		schedEnd = min(time.Since(start), schedEnd)
		cancel()
	} else if end := start.Add(schedEnd); time.Until(end) > 0 && !sleepUntil(ctx, end) {
		// The last send may come well before the last phase ends (a slow
		// rate, a pause): the run lasts as long as it was planned to,
		// unless it is interrupted meanwhile.
		interrupted = true
		schedEnd = time.Since(start)
		cancel()
	}
	wg.Wait()
	stopProgress()

	rep := g.report(rec, start, time.Since(start), schedEnd)
	rep.Interrupted = interrupted
	if interrupted {
		return rep, fmt.Errorf("loadgen: run interrupted: %w", parent.Err())
	}
	return rep, nil
}

// startProgress starts the progress line when the config asks for one,
// and returns the func that stops it and waits for it.
func (g *generator) startProgress(ctx context.Context, rec *recorder, outstanding *atomic.Int64, start time.Time) (stop func()) {
	if g.cfg.Progress == nil {
		return func() {}
	}
	p := &progress{w: g.cfg.Progress, rec: rec, outstanding: outstanding, start: start}
	pctx, pcancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.run(pctx, g.cfg.ProgressInterval)
	}()
	return func() { pcancel(); <-done }
}

// send sends every request of the schedule at its time from start, each
// on a goroutine of wg, and records it in rec; a request due while
// MaxOutstanding are in flight is recorded as dropped instead. It reports
// false if ctx ended the schedule early.
func (g *generator) send(ctx context.Context, start time.Time, rec *recorder, wg *sync.WaitGroup, outstanding *atomic.Int64) bool {
	rnd := rand.New(rand.NewPCG(g.cfg.Seed, 0x5eed))
	sched := newSchedule(g.cfg.Phases)
	for {
		at, phase, ok := sched.next()
		if !ok {
			return true
		}
		due := start.Add(at)
		if !sleepUntil(ctx, due) {
			return false
		}
		sp := g.draw(rnd)
		rec.scheduled()
		// Only this goroutine adds, so the check cannot race past the cap.
		if outstanding.Load() >= int64(g.cfg.MaxOutstanding) {
			rec.record(&result{at: at, phase: phase, classes: sp.classes, dropped: true})
			continue
		}
		outstanding.Add(1)
		wg.Go(func() {
			defer outstanding.Add(-1)
			res := g.do(ctx, due, sp)
			res.at, res.phase = at, phase
			rec.record(res)
		})
	}
}

// sleepUntil waits until t, and reports false if ctx is done first (or
// already, when t has passed).
func sleepUntil(ctx context.Context, t time.Time) bool {
	wait := time.Until(t)
	if wait <= 0 {
		return ctx.Err() == nil
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// draw picks one logical request's URL and headers. rnd is the run's
// PRNG, used only by the sending goroutine, so a seed fixes the sequence.
func (g *generator) draw(rnd *rand.Rand) spec {
	sp := spec{url: g.urls[0], header: g.cfg.Header, seed: rnd.Uint64()}
	if len(g.mixes) == 0 {
		return sp
	}
	sp.classes = make([]int, len(g.mixes))
	nh := len(g.cfg.HeaderMixes)
	if nh > 0 {
		sp.header = g.cfg.Header.Clone()
		if sp.header == nil {
			sp.header = make(http.Header, nh)
		}
	}
	for i, m := range g.mixes {
		j := m.pick(rnd)
		sp.classes[i] = g.base[i] + j
		if i < nh {
			mix := g.cfg.HeaderMixes[i]
			sp.header.Set(mix.Name, mix.Values[j].Value)
		} else {
			sp.url = g.urls[j]
		}
	}
	return sp
}

// do sends one logical request, retrying as the policy says, and returns
// its fate. due is its scheduled send time.
func (g *generator) do(ctx context.Context, due time.Time, sp spec) *result {
	res := &result{classes: sp.classes}
	var rnd *rand.Rand // made on the first retry: most requests never need it
	deadline := due.Add(g.cfg.Timeout)
	for n := 1; ; n++ {
		a := g.attempt(ctx, deadline, sp)
		res.attempts++
		if a.kind == "" {
			res.ok = true
			res.latency = a.end.Sub(due)
			return res
		}
		res.failed = append(res.failed, a.kind)
		if ctx.Err() != nil || a.kind == KindNotLoopback {
			return res
		}
		if rnd == nil {
			rnd = rand.New(rand.NewPCG(sp.seed, uint64(n)))
		}
		wait, again := g.policy.wait(n, a.status, a.retryAfter, time.Now(), rnd)
		if !again {
			return res
		}
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return res
			case <-t.C:
			}
		}
		deadline = time.Now().Add(g.cfg.Timeout)
	}
}

// attemptResult is one attempt's outcome: kind is empty on success.
type attemptResult struct {
	kind       string
	status     int // 0 when no response arrived
	retryAfter string
	end        time.Time // when the response's last byte was read
}

func (g *generator) attempt(ctx context.Context, deadline time.Time, sp spec) attemptResult {
	actx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	var body io.Reader
	if g.cfg.Body != nil {
		body = bytes.NewReader(g.cfg.Body)
	}
	req, err := http.NewRequestWithContext(actx, g.cfg.Method, sp.url, body)
	if err != nil {
		// The URL and method were validated; this is a programming error.
		panic(fmt.Sprintf("loadgen: building request: %v", err))
	}
	if sp.header != nil {
		req.Header = sp.header
	}
	if g.host != "" {
		req.Host = g.host
	}
	resp, err := g.rt.RoundTrip(req)
	if err != nil {
		return attemptResult{kind: errorKind(ctx, actx, err)}
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	end := time.Now()
	if err != nil {
		return attemptResult{kind: errorKind(ctx, actx, err)}
	}
	if !end.Before(deadline) {
		// Cancellation did not cut the response short (a body that ignores
		// it, or this goroutine starved of CPU past the deadline): the
		// caller would have given up all the same.
		return attemptResult{kind: KindTimeout}
	}
	a := attemptResult{status: resp.StatusCode, retryAfter: resp.Header.Get("Retry-After"), end: end}
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		a.kind = statusKind(resp.StatusCode, resp.Header.Get(admission.HeaderShed))
	}
	return a
}

// errorKind names a failure that produced no complete response.
func errorKind(run, attempt context.Context, err error) string {
	switch {
	case run.Err() != nil:
		return KindCanceled
	case attempt.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	case errors.Is(err, ErrNotLoopback):
		return KindNotLoopback
	default:
		return KindConnError
	}
}

// statusKind names a failed response: "503:<reason>" for a shed naming its
// reason, else the status code.
func statusKind(code int, shed string) string {
	s := strconv.Itoa(code)
	if code != http.StatusServiceUnavailable || shed == "" {
		return s
	}
	if !isReasonToken(shed) {
		// Any server may answer; keep the number of distinct kinds bounded.
		return s + ":other"
	}
	return s + ":" + shed
}

func isReasonToken(s string) bool {
	if len(s) > 32 {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// Chooser draws an index of a mix by weight: the load's header and query
// mixes, and whatever else draws from the same mixes (the evaluation
// suite's capacity measurement).
type Chooser struct {
	cum []float64 // running sums of the weights
}

// NewChooser returns a Chooser of ws, whose weights Config.Validate
// accepts (at least one positive).
func NewChooser(ws []Weighted) Chooser {
	c := Chooser{cum: make([]float64, len(ws))}
	var sum float64
	for i, w := range ws {
		sum += w.Weight
		c.cum[i] = sum
	}
	return c
}

// At returns the index that x, in [0, 1), falls on when the weights are
// laid end to end: never one of weight 0.
func (c Chooser) At(x float64) int {
	x *= c.cum[len(c.cum)-1]
	for i, s := range c.cum {
		if x < s {
			return i
		}
	}
	return len(c.cum) - 1
}

func (c Chooser) pick(rnd *rand.Rand) int { return c.At(rnd.Float64()) }
