package loadgen

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

func TestBackoffFullJitter(t *testing.T) {
	const base, maxWait = 100 * time.Millisecond, time.Second
	rnd := rand.New(rand.NewPCG(7, 7))
	for n := 1; n <= 70; n++ {
		ceiling := maxWait
		if n <= 4 {
			ceiling = base << (n - 1) // 100, 200, 400, 800 ms
		}
		var top time.Duration
		for range 2000 {
			d := backoff(n, base, maxWait, rnd)
			if d < 0 || d >= ceiling {
				t.Fatalf("backoff(%d) = %v, want in [0, %v)", n, d, ceiling)
			}
			top = max(top, d)
		}
		// Full jitter spreads over the whole range, not just near its top.
		if top < ceiling*9/10 {
			t.Errorf("backoff(%d): largest of 2000 draws %v, want near %v", n, top, ceiling)
		}
	}
}

func TestBackoffIsSeeded(t *testing.T) {
	a := rand.New(rand.NewPCG(42, 1))
	b := rand.New(rand.NewPCG(42, 1))
	c := rand.New(rand.NewPCG(43, 1))
	same, differ := true, false
	for n := 1; n <= 5; n++ {
		x, y, z := backoff(n, 50*time.Millisecond, time.Second, a), backoff(n, 50*time.Millisecond, time.Second, b), backoff(n, 50*time.Millisecond, time.Second, c)
		same = same && x == y
		differ = differ || x != z
	}
	if !same {
		t.Error("the same seed gave different waits")
	}
	if !differ {
		t.Error("different seeds gave the same waits")
	}
	if got := backoff(1, 0, time.Second, a); got != 0 {
		t.Errorf("backoff with base 0 = %v, want 0", got)
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"", 0, false},
		{"1", time.Second, true},
		{" 30 ", 30 * time.Second, true},
		{"0", 0, true},
		{"-1", 0, false},
		{"soon", 0, false},
		{"1.5", 0, false},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second, true},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, ok := parseRetryAfter(tt.in, now)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("parseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetryPolicyWait(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	backoffs := retryPolicy{mode: RetryBackoff, maxAttempts: 3, base: 100 * time.Millisecond, maxWait: 5 * time.Second}
	honour := backoffs
	honour.mode = RetryRetryAfter
	immediate := backoffs
	immediate.mode = RetryImmediate
	tests := []struct {
		name       string
		p          retryPolicy
		n, status  int
		retryAfter string
		wantMax    time.Duration // the wait is in [wantMin, wantMax]
		wantMin    time.Duration
		wantAgain  bool
	}{
		{"none never retries", retryPolicy{mode: RetryNone, maxAttempts: 1}, 1, 503, "", 0, 0, false},
		{"immediate", immediate, 1, 503, "5", 0, 0, true},
		{"immediate after a timeout", immediate, 2, 0, "", 0, 0, true},
		{"attempts spent", immediate, 3, 503, "", 0, 0, false},
		{"4xx would fail again", immediate, 1, 404, "", 0, 0, false},
		{"429 is retried", immediate, 1, 429, "", 0, 0, true},
		{"backoff ignores Retry-After", backoffs, 2, 503, "3", 200 * time.Millisecond, 0, true},
		{"retry-after honoured", honour, 1, 503, "2", 2 * time.Second, 2 * time.Second, true},
		{"retry-after as a date", honour, 1, 429, now.Add(3 * time.Second).Format(http.TimeFormat), 3 * time.Second, 3 * time.Second, true},
		{"retry-after beyond patience gives up", honour, 1, 503, "30", 30 * time.Second, 30 * time.Second, false},
		{"retry-after absent falls back to backoff", honour, 1, 503, "", 100 * time.Millisecond, 0, true},
		{"retry-after garbage falls back to backoff", honour, 2, 503, "later", 200 * time.Millisecond, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rnd := rand.New(rand.NewPCG(1, 1))
			got, again := tt.p.wait(tt.n, tt.status, tt.retryAfter, now, rnd)
			if again != tt.wantAgain {
				t.Fatalf("again = %v, want %v", again, tt.wantAgain)
			}
			if got < tt.wantMin || got > tt.wantMax {
				t.Errorf("wait = %v, want in [%v, %v]", got, tt.wantMin, tt.wantMax)
			}
		})
	}
}
