package client

import (
	"cmp"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"time"
)

// Options tunes a Transport's bounds. The zero value of every field selects
// the default written beside it; negative values switch a rule off where
// the field says so.
type Options struct {
	// MaxAttempts bounds the attempts per request, the first included.
	// Zero means 3; 1 means never retry.
	MaxAttempts int
	// RetryRatio bounds retries to this fraction of the requests over
	// RetryWindow, per Transport. Zero means 0.1; negative means retries
	// only within RetryMinRate.
	RetryRatio float64
	// RetryMinRate is the rate of retries per second, averaged over
	// RetryWindow, allowed whatever RetryRatio says, so that a quiet client
	// can still retry. Zero means 3; negative means none.
	RetryMinRate float64
	// RetryWindow is the span over which retries are counted. Zero means
	// 10 s.
	RetryWindow time.Duration

	// BackoffBase and BackoffCap shape the wait before a retry when the
	// response has no Retry-After: uniform in [0, min(BackoffCap,
	// BackoffBase * 2^(retry-1))). Zero means 100 ms and 5 s.
	BackoffBase time.Duration
	BackoffCap  time.Duration
	// MaxWait is the longest Retry-After the Transport waits out; a server
	// asking for more gets its response returned instead. Zero means 10 s.
	MaxWait time.Duration

	// ThrottleK is the adaptive throttle's multiplier K: requests to a host
	// are rejected locally with probability
	// max(0, (requests - K*accepts) / (requests + 1)). Zero means 2;
	// negative switches throttling off; otherwise it must be at least 1.
	ThrottleK float64
	// ThrottleMaxProbability caps the rejection probability, so that a
	// client keeps sending enough to notice that a host has recovered.
	// Zero means 0.8; it must be at most 1.
	ThrottleMaxProbability float64
	// ThrottleWindow is the span over which requests and accepts are
	// counted. Zero means 2 minutes.
	ThrottleWindow time.Duration
	// ThrottleMinRate is the request rate per second, averaged over
	// ThrottleWindow, under which a host is never throttled. Zero means
	// 0.2 (24 requests over the default window); negative means no minimum.
	ThrottleMinRate float64

	// BreakerFailures consecutive failures open a host's circuit breaker.
	// Zero means 5; negative switches this rule off.
	BreakerFailures int
	// BreakerRatio of failures among at least BreakerMinRequests results
	// over BreakerWindow also opens it. Zero means 0.5, 20 requests and
	// 10 s; a negative ratio switches this rule off.
	BreakerRatio       float64
	BreakerMinRequests int
	BreakerWindow      time.Duration
	// BreakerCooldown is how long an open breaker rejects before letting
	// probes through. Zero means 5 s.
	BreakerCooldown time.Duration
	// BreakerProbes is how many requests a half-open breaker lets through
	// at once. Zero means 3.
	BreakerProbes int

	// Rand returns pseudo-random numbers uniform in [0, 1) for jitter and
	// throttling; it must be safe for concurrent use. nil means
	// math/rand/v2.Float64.
	Rand func() float64
	// Logger receives a record when a circuit breaker opens or closes.
	// nil means no logging.
	Logger *slog.Logger
}

// Validate reports every field whose value makes no sense, one error each
// (errors.Join), naming the field, its value and what is allowed; nil means
// New accepts o. The zero Options is valid.
func (o Options) Validate() error {
	var errs []error
	bad := func(field string, v any, why string) {
		errs = append(errs, fmt.Errorf("client: Options.%s = %v: %s", field, v, why))
	}
	if o.MaxAttempts < 0 {
		bad("MaxAttempts", o.MaxAttempts, "must be >= 0")
	}
	if math.IsNaN(o.RetryRatio) || o.RetryRatio > 1 {
		bad("RetryRatio", o.RetryRatio, "must be <= 1 (retries at most as many as requests)")
	}
	if o.ThrottleK > 0 && o.ThrottleK < 1 || math.IsNaN(o.ThrottleK) {
		bad("ThrottleK", o.ThrottleK, "must be >= 1 (below 1 a healthy host is throttled) or negative to switch throttling off")
	}
	if math.IsNaN(o.RetryMinRate) {
		bad("RetryMinRate", o.RetryMinRate, "must be a number")
	}
	if math.IsNaN(o.ThrottleMaxProbability) || o.ThrottleMaxProbability < 0 || o.ThrottleMaxProbability > 1 {
		bad("ThrottleMaxProbability", o.ThrottleMaxProbability, "must be in [0, 1]")
	}
	if math.IsNaN(o.ThrottleMinRate) {
		bad("ThrottleMinRate", o.ThrottleMinRate, "must be a number")
	}
	if math.IsNaN(o.BreakerRatio) || o.BreakerRatio > 1 {
		bad("BreakerRatio", o.BreakerRatio, "must be <= 1")
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{
		{"RetryWindow", o.RetryWindow}, {"BackoffBase", o.BackoffBase}, {"BackoffCap", o.BackoffCap},
		{"MaxWait", o.MaxWait}, {"ThrottleWindow", o.ThrottleWindow}, {"BreakerWindow", o.BreakerWindow},
		{"BreakerCooldown", o.BreakerCooldown},
	} {
		if d.v < 0 {
			bad(d.name, d.v, "must be >= 0")
		}
	}
	if o.BreakerMinRequests < 0 {
		bad("BreakerMinRequests", o.BreakerMinRequests, "must be >= 0")
	}
	if o.BreakerProbes < 0 {
		bad("BreakerProbes", o.BreakerProbes, "must be >= 0")
	}
	return errors.Join(errs...)
}

// config is Options with the defaults applied.
type config struct {
	maxAttempts                      int
	retryRatio                       float64
	retryMinRate                     float64
	retryWindow                      time.Duration
	backoffBase, backoffCap, maxWait time.Duration
	throttleK, throttleMaxP          float64
	throttleWindow                   time.Duration
	throttleMinRate                  float64
	breaker                          breakerConfig
	rand                             func() float64
	log                              *slog.Logger
}

func (o Options) config() config {
	c := config{
		maxAttempts:     cmp.Or(o.MaxAttempts, 3),
		retryRatio:      max(cmp.Or(o.RetryRatio, 0.1), 0),
		retryMinRate:    max(cmp.Or(o.RetryMinRate, 3), 0),
		retryWindow:     cmp.Or(o.RetryWindow, 10*time.Second),
		backoffBase:     cmp.Or(o.BackoffBase, 100*time.Millisecond),
		backoffCap:      cmp.Or(o.BackoffCap, 5*time.Second),
		maxWait:         cmp.Or(o.MaxWait, 10*time.Second),
		throttleK:       max(cmp.Or(o.ThrottleK, 2), 0),
		throttleMaxP:    cmp.Or(o.ThrottleMaxProbability, 0.8),
		throttleWindow:  cmp.Or(o.ThrottleWindow, 2*time.Minute),
		throttleMinRate: max(cmp.Or(o.ThrottleMinRate, 0.2), 0),
		breaker: breakerConfig{
			failures:   cmp.Or(o.BreakerFailures, 5),
			ratio:      cmp.Or(o.BreakerRatio, 0.5),
			minVolume:  cmp.Or(o.BreakerMinRequests, 20),
			windowSize: cmp.Or(o.BreakerWindow, 10*time.Second),
			cooldown:   cmp.Or(o.BreakerCooldown, 5*time.Second),
			probes:     cmp.Or(o.BreakerProbes, 3),
		},
		rand: o.Rand,
		log:  o.Logger,
	}
	if c.rand == nil {
		c.rand = rand.Float64
	}
	return c
}
