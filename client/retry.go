package client

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// idempotent reports whether req may be sent twice: its method is
// idempotent (RFC 9110 §9.2.2) or it carries an idempotency key, and its
// body can be replayed.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
	default:
		// net/http honours both spellings of the key for its own retries.
		if _, ok := req.Header["Idempotency-Key"]; !ok {
			if _, ok := req.Header["X-Idempotency-Key"]; !ok {
				return false
			}
		}
	}
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// shedStatus reports whether a response status asks the client to come back
// later: 503 (overloaded, shed) or 429 (over its share). Other statuses are
// answers and are not retried.
func shedStatus(code int) bool {
	return code == http.StatusServiceUnavailable || code == http.StatusTooManyRequests
}

// retryAfter parses a Retry-After header at now: delay-seconds or an HTTP
// date. ok is false when the header is absent or malformed; a date in the
// past means no wait.
func retryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		// Anything beyond a day is as good as forever; avoid overflow.
		return time.Duration(min(secs, 86400)) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// backoff returns the wait before retry number n (1 for the first retry):
// full jitter over an exponential ceiling, rnd * min(limit, base * 2^(n-1)),
// with rnd uniform in [0, 1). Full jitter spreads a crowd of clients that
// failed together over the whole interval instead of bunching them at its end.
func backoff(n int, base, limit time.Duration, rnd float64) time.Duration {
	ceiling := base
	for i := 1; i < n && ceiling < limit; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, limit)
	return time.Duration(rnd * float64(ceiling))
}

// spread lengthens a server-given wait by up to a tenth, so that clients
// shed together with the same Retry-After do not all come back together.
func spread(d time.Duration, rnd float64) time.Duration {
	return d + time.Duration(rnd*float64(d)/10)
}

// maxDrain is how much of a shed response's body is read so that its
// connection can be reused; a longer body costs the connection instead.
const maxDrain = 4 << 10

func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	_ = resp.Body.Close()
}
