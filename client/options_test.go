package client

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    Options
		want string // a substring of the error; empty means valid
	}{
		{"zero value", Options{}, ""},
		{"switches off", Options{ThrottleK: -1, BreakerFailures: -1, BreakerRatio: -1, RetryRatio: -1, RetryMinRate: -1}, ""},
		{"negative attempts", Options{MaxAttempts: -1}, "MaxAttempts"},
		{"ratio over 1", Options{RetryRatio: 1.5}, "RetryRatio"},
		{"NaN ratio", Options{RetryRatio: math.NaN()}, "RetryRatio"},
		{"K below 1", Options{ThrottleK: 0.5}, "ThrottleK"},
		{"max probability over 1", Options{ThrottleMaxProbability: 1.1}, "ThrottleMaxProbability"},
		{"negative max probability", Options{ThrottleMaxProbability: -0.1}, "ThrottleMaxProbability"},
		{"NaN min rate", Options{ThrottleMinRate: math.NaN()}, "ThrottleMinRate"},
		{"NaN retry rate", Options{RetryMinRate: math.NaN()}, "RetryMinRate"},
		{"breaker ratio over 1", Options{BreakerRatio: 2}, "BreakerRatio"},
		{"negative duration", Options{BreakerCooldown: -time.Second}, "BreakerCooldown"},
		{"negative min requests", Options{BreakerMinRequests: -1}, "BreakerMinRequests"},
		{"negative probes", Options{BreakerProbes: -1}, "BreakerProbes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate = %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate = %v, want an error naming %s", err, tt.want)
			}
		})
	}
}

// Every wrong field is reported at once, each by name, so that a caller
// fixes them in one pass.
func TestOptionsValidateReportsEveryField(t *testing.T) {
	o := Options{
		MaxAttempts: -1, RetryRatio: 2, RetryMinRate: math.NaN(), RetryWindow: -1,
		BackoffBase: -1, BackoffCap: -1, MaxWait: -1,
		ThrottleK: 0.5, ThrottleMaxProbability: 2, ThrottleWindow: -1, ThrottleMinRate: math.NaN(),
		BreakerRatio: 2, BreakerMinRequests: -1, BreakerWindow: -1, BreakerCooldown: -1, BreakerProbes: -1,
	}
	fields := []string{"MaxAttempts", "RetryRatio", "RetryMinRate", "RetryWindow",
		"BackoffBase", "BackoffCap", "MaxWait",
		"ThrottleK", "ThrottleMaxProbability", "ThrottleWindow", "ThrottleMinRate",
		"BreakerRatio", "BreakerMinRequests", "BreakerWindow", "BreakerCooldown", "BreakerProbes"}
	err := o.Validate()
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(fields) {
		t.Fatalf("got %v, want %d joined errors", err, len(fields))
	}
	for _, f := range fields {
		if !strings.Contains(err.Error(), "Options."+f+" = ") {
			t.Errorf("got %v, want an error naming %s", err, f)
		}
	}
}

func TestOptionsDefaults(t *testing.T) {
	c := Options{}.config()
	got := []any{c.maxAttempts, c.retryRatio, c.retryMinRate, c.retryWindow, c.backoffBase, c.backoffCap, c.maxWait,
		c.throttleK, c.throttleMaxP, c.throttleWindow, c.throttleMinRate,
		c.breaker.failures, c.breaker.ratio, c.breaker.minVolume, c.breaker.windowSize, c.breaker.cooldown, c.breaker.probes}
	want := []any{3, 0.1, 3.0, 10 * time.Second, 100 * time.Millisecond, 5 * time.Second, 10 * time.Second,
		2.0, 0.8, 2 * time.Minute, 0.2,
		5, 0.5, 20, 10 * time.Second, 5 * time.Second, 3}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("default %d = %v, want %v", i, got[i], want[i])
		}
	}
	if c.rand == nil {
		t.Error("default rand is nil")
	}
	off := Options{ThrottleK: -1, RetryRatio: -1, RetryMinRate: -1, ThrottleMinRate: -1}.config()
	if off.throttleK != 0 || off.retryRatio != 0 || off.retryMinRate != 0 || off.throttleMinRate != 0 {
		t.Errorf("negative options = (K %v, ratio %v, retry rate %v, min rate %v), want all 0 (off)",
			off.throttleK, off.retryRatio, off.retryMinRate, off.throttleMinRate)
	}
}
