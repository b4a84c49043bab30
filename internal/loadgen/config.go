package loadgen

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults applied by Run to zero fields of Config.
const (
	DefaultTimeout          = time.Second
	DefaultMaxOutstanding   = 4096
	DefaultRetryAttempts    = 3
	DefaultBackoffBase      = 100 * time.Millisecond
	DefaultBackoffMax       = 5 * time.Second
	DefaultProgressInterval = 500 * time.Millisecond
)

// Config describes one load run. It is a plain value: Run copies it and
// applies the defaults named on each field to its zero fields. Validate
// says which field is wrong and why.
type Config struct {
	// URL is the target, an absolute http or https URL. Required.
	URL string

	// Phases are run one after another. At least one is required.
	Phases []Phase

	// Timeout is the caller's patience for one attempt: the time from the
	// attempt's start (for the first attempt, its scheduled send time) to
	// the last byte of the response body. Zero means DefaultTimeout (1 s).
	Timeout time.Duration

	// MaxOutstanding caps the logical requests in flight (each is one
	// goroutine, retries included). A send scheduled while the cap is hit
	// is not delayed: it is counted as generator-dropped. Zero means
	// DefaultMaxOutstanding.
	MaxOutstanding int

	// DisableKeepAlives opens a new connection for every attempt, as
	// browsers arriving fresh do. The zero value reuses connections.
	DisableKeepAlives bool

	// Method is the HTTP method; empty means GET.
	Method string

	// Body is sent with every attempt; nil means no body.
	Body []byte

	// Header holds extra request headers sent with every attempt. A Host
	// entry sets the request's Host.
	Header http.Header

	// HeaderMixes set a header per logical request to a value drawn by
	// weight, e.g. tenants in Sluice-Tenant or classes in Sluice-Priority.
	HeaderMixes []HeaderMix

	// QueryMix appends a query string drawn by weight to URL per logical
	// request, e.g. "cpu=5" 90% and "cpu=50" 10%. Empty means none.
	QueryMix []Weighted

	// Seed seeds the PRNG that draws mixes and jitter, so that a run is
	// reproducible. Every value, zero included, is a valid seed.
	Seed uint64

	// Retry is what the client does when an attempt fails. The zero value
	// is RetryNone.
	Retry RetryMode

	// MaxAttempts bounds attempts per logical request, the first included.
	// Zero means 1 with RetryNone and DefaultRetryAttempts otherwise.
	MaxAttempts int

	// BackoffBase and BackoffMax shape exponential backoff with full
	// jitter: the wait before attempt n+1 is uniform in
	// [0, min(BackoffMax, BackoffBase*2^(n-1))). BackoffMax also caps a
	// Retry-After wait: a server asking for longer ends the logical request
	// as failed. Zero means DefaultBackoffBase and DefaultBackoffMax.
	BackoffBase time.Duration
	BackoffMax  time.Duration

	// Bucket is the width of a time-series point. Zero means 250 ms for
	// runs planned to last up to two minutes and 1 s for longer ones.
	Bucket time.Duration

	// Transport sends the attempts. Nil means a transport built for the
	// run (no proxy, DisableKeepAlives as set, an idle pool as large as
	// MaxOutstanding) and closed after it. Redirects are never followed.
	Transport http.RoundTripper

	// LoopbackOnly refuses to connect to any address that is not a
	// loopback address, checked on the resolved address at dial time. It
	// needs the built transport, so it cannot be combined with Transport.
	LoopbackOnly bool

	// Progress receives a live status line, rewritten in place with '\r',
	// every ProgressInterval; nil means quiet. Give it a terminal only.
	Progress io.Writer

	// ProgressInterval is the progress line's period; zero means
	// DefaultProgressInterval.
	ProgressInterval time.Duration

	// Logger receives debug records; nil means discard.
	Logger *slog.Logger
}

// Phase is a stretch of constant or linearly changing offered load.
type Phase struct {
	// Name labels the phase in reports; empty means one is derived from
	// the rate, e.g. "100/s" or "100->800/s".
	Name string `json:"name,omitempty"`
	// Rate is the offered load in logical requests per second at the
	// phase's start. Zero is a pause: time passes and nothing is sent.
	Rate float64 `json:"rate"`
	// RampTo, when positive, is the rate at the phase's end, reached
	// linearly. Zero means constant Rate.
	RampTo float64 `json:"ramp_to,omitempty"`
	// Duration is the phase's length; it must be positive.
	Duration time.Duration `json:"duration_ns"`
}

// endRate returns the rate at the phase's end.
func (p Phase) endRate() float64 {
	if p.RampTo > 0 {
		return p.RampTo
	}
	return p.Rate
}

// label returns Name, or one derived from the rates.
func (p Phase) label() string {
	if p.Name != "" {
		return p.Name
	}
	if p.RampTo > 0 && p.RampTo != p.Rate {
		return formatRate(p.Rate) + "->" + formatRate(p.RampTo) + "/s"
	}
	return formatRate(p.Rate) + "/s"
}

// Weighted is one value of a mix and its relative weight.
type Weighted struct {
	Value  string  `json:"value"`
	Weight float64 `json:"weight"`
}

// HeaderMix draws the value of header Name from Values by weight.
type HeaderMix struct {
	Name   string
	Values []Weighted
}

// RetryMode is the client's behaviour when an attempt fails.
type RetryMode uint8

const (
	RetryNone       RetryMode = iota // one attempt per logical request
	RetryImmediate                   // re-send at once
	RetryBackoff                     // exponential backoff with full jitter
	RetryRetryAfter                  // wait as Retry-After says, else back off
)

var retryNames = [...]string{
	RetryNone:       "none",
	RetryImmediate:  "immediate",
	RetryBackoff:    "backoff",
	RetryRetryAfter: "retry-after",
}

func (m RetryMode) String() string {
	if int(m) < len(retryNames) {
		return retryNames[m]
	}
	return fmt.Sprintf("retrymode(%d)", uint8(m))
}

// ParseRetryMode parses "none", "immediate", "backoff" or "retry-after".
func ParseRetryMode(s string) (RetryMode, error) {
	for i, name := range retryNames {
		if s == name {
			return RetryMode(i), nil
		}
	}
	return 0, fmt.Errorf("loadgen: unknown retry mode %q (want none, immediate, backoff or retry-after)", s)
}

// ErrConfig is wrapped by every error Validate returns.
var ErrConfig = errors.New("loadgen: invalid config")

func configErr(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrConfig, field, fmt.Sprintf(format, args...))
}

// Validate reports the first field that is wrong and why. Zero fields that
// have defaults are valid.
func (c *Config) Validate() error {
	if err := c.validateURL(); err != nil {
		return err
	}
	if err := c.validatePhases(); err != nil {
		return err
	}
	if err := c.validateClient(); err != nil {
		return err
	}
	return c.validateMixes()
}

func (c *Config) validateURL() error {
	u, err := url.Parse(c.URL)
	switch {
	case c.URL == "":
		return configErr("URL", "empty")
	case err != nil:
		return configErr("URL", "%v", err)
	case u.Scheme != "http" && u.Scheme != "https":
		return configErr("URL", "scheme %q, want http or https", u.Scheme)
	case u.Host == "":
		return configErr("URL", "no host in %q", c.URL)
	}
	return nil
}

func (c *Config) validatePhases() error {
	if len(c.Phases) == 0 {
		return configErr("Phases", "none")
	}
	for i, p := range c.Phases {
		field := fmt.Sprintf("Phases[%d]", i)
		switch {
		case p.Duration <= 0:
			return configErr(field, "duration %v, want > 0", p.Duration)
		case !finiteNonNeg(p.Rate):
			return configErr(field, "rate %v, want a finite rate >= 0", p.Rate)
		case !finiteNonNeg(p.RampTo):
			return configErr(field, "ramp end %v, want a finite rate >= 0", p.RampTo)
		}
	}
	return nil
}

// validateClient checks how the client sends: its bounds, retries and
// method.
func (c *Config) validateClient() error {
	switch {
	case c.Timeout < 0:
		return configErr("Timeout", "%v, want >= 0", c.Timeout)
	case c.MaxOutstanding < 0:
		return configErr("MaxOutstanding", "%d, want >= 0", c.MaxOutstanding)
	case c.MaxAttempts < 0:
		return configErr("MaxAttempts", "%d, want >= 0", c.MaxAttempts)
	case c.Retry == RetryNone && c.MaxAttempts > 1:
		return configErr("MaxAttempts", "%d with Retry none, want 0 or 1", c.MaxAttempts)
	case int(c.Retry) >= len(retryNames):
		return configErr("Retry", "unknown mode %d", c.Retry)
	case c.BackoffBase < 0:
		return configErr("BackoffBase", "%v, want >= 0", c.BackoffBase)
	case c.BackoffMax < 0:
		return configErr("BackoffMax", "%v, want >= 0", c.BackoffMax)
	case c.Bucket < 0:
		return configErr("Bucket", "%v, want >= 0", c.Bucket)
	case c.ProgressInterval < 0:
		return configErr("ProgressInterval", "%v, want >= 0", c.ProgressInterval)
	case c.LoopbackOnly && c.Transport != nil:
		return configErr("LoopbackOnly", "cannot be enforced on a caller's Transport")
	}
	if c.Method != "" && strings.ContainsAny(c.Method, " \t\r\n") {
		return configErr("Method", "%q is not a method", c.Method)
	}
	return nil
}

func (c *Config) validateMixes() error {
	for i, m := range c.HeaderMixes {
		field := fmt.Sprintf("HeaderMixes[%d]", i)
		if m.Name == "" {
			return configErr(field, "empty header name")
		}
		if err := validateWeights(m.Values); err != nil {
			return configErr(field, "%v", err)
		}
	}
	if len(c.QueryMix) > 0 {
		if err := validateWeights(c.QueryMix); err != nil {
			return configErr("QueryMix", "%v", err)
		}
		for _, w := range c.QueryMix {
			if _, err := url.ParseQuery(w.Value); err != nil {
				return configErr("QueryMix", "%q: %v", w.Value, err)
			}
		}
	}
	return nil
}

func validateWeights(ws []Weighted) error {
	if len(ws) == 0 {
		return errors.New("no values")
	}
	var total float64
	for _, w := range ws {
		if !finiteNonNeg(w.Weight) {
			return fmt.Errorf("value %q has weight %v, want a finite weight >= 0", w.Value, w.Weight)
		}
		total += w.Weight
	}
	if total <= 0 {
		return errors.New("weights sum to zero")
	}
	return nil
}

func finiteNonNeg(f float64) bool { return f >= 0 && !math.IsInf(f, 1) }

// withDefaults returns c with the documented defaults applied.
func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxOutstanding == 0 {
		c.MaxOutstanding = DefaultMaxOutstanding
	}
	if c.Method == "" {
		c.Method = http.MethodGet
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 1
		if c.Retry != RetryNone {
			c.MaxAttempts = DefaultRetryAttempts
		}
	}
	if c.BackoffBase == 0 {
		c.BackoffBase = DefaultBackoffBase
	}
	if c.BackoffMax == 0 {
		c.BackoffMax = DefaultBackoffMax
	}
	if c.Bucket == 0 {
		c.Bucket = 250 * time.Millisecond
		if plannedDuration(c.Phases) > 2*time.Minute {
			c.Bucket = time.Second
		}
	}
	if c.ProgressInterval == 0 {
		c.ProgressInterval = DefaultProgressInterval
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

func plannedDuration(phases []Phase) time.Duration {
	var d time.Duration
	for _, p := range phases {
		d += p.Duration
	}
	return d
}
