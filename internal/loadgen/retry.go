package loadgen

import (
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// retryPolicy decides whether and when a failed attempt is tried again.
// It is pure: time and randomness are parameters.
type retryPolicy struct {
	mode          RetryMode
	maxAttempts   int
	base, maxWait time.Duration
}

// wait returns how long to wait before the attempt after failed attempt n
// (counted from 1), or false when the logical request ends here: retries
// are off or spent, the failure would repeat (a 4xx other than 429), or
// Retry-After asks for more than p.maxWait. retryAfter is the failed
// response's Retry-After header, empty when absent.
func (p retryPolicy) wait(n int, status int, retryAfter string, now time.Time, rnd *rand.Rand) (time.Duration, bool) {
	if p.mode == RetryNone || n >= p.maxAttempts || !retryable(status) {
		return 0, false
	}
	switch p.mode {
	case RetryImmediate:
		return 0, true
	case RetryRetryAfter:
		if d, ok := parseRetryAfter(retryAfter, now); ok {
			return d, d <= p.maxWait
		}
	}
	return backoff(n, p.base, p.maxWait, rnd), true
}

// retryable reports whether an attempt that ended with status is worth
// repeating. Status 0 stands for no response: a timeout or a connection
// error.
func retryable(status int) bool {
	return status == 0 || status == http.StatusTooManyRequests || status >= 500
}

// backoff returns a wait drawn uniformly from [0, min(maxWait, base*2^(n-1))):
// exponential backoff with full jitter, so that clients shed at the same
// moment do not return at the same moment.
func backoff(n int, base, maxWait time.Duration, rnd *rand.Rand) time.Duration {
	ceiling := maxWait
	if n-1 < 62 && base <= maxWait>>(n-1) {
		ceiling = base << (n - 1)
	}
	if ceiling <= 0 {
		return 0
	}
	return time.Duration(rnd.Int64N(int64(ceiling)))
}

// parseRetryAfter reads a Retry-After value, either delay-seconds or an
// HTTP date (RFC 9110 §10.2.3), as a wait from now. A date in the past
// means no wait.
func parseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 32); err == nil {
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
