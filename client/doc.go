// Package client is the outbound half of sluice: an http.RoundTripper a Go
// service puts under its http.Client so that its calls to other services
// carry deadlines and priorities downstream and do not amplify a downstream
// overload.
//
// # Why
//
// Shedding load at a server is only half of overload control. A shed
// request that is retried at once, by every client, at every layer, is
// load again: retries are the sustaining loop of a metastable failure
// (Bronson et al., HotOS 2021), in which the system stays overloaded after
// the trigger is gone because its own clients keep it there. Each bound
// below cuts that loop in a different place; none is enough alone.
//
// # Propagation
//
// When the request's context has a deadline, the request carries
// Sluice-Timeout: the milliseconds left, rounded down, recomputed for
// every attempt. A request with less than a millisecond left is not sent:
// it fails at once with an error wrapping context.DeadlineExceeded, because
// work whose answer nobody will wait for is the purest waste in an
// overload. When the context carries a priority (WithPriority, or the
// admission.Request of the inbound request, see admission.FromContext), the
// request carries Sluice-Priority, so that the next sluice sheds the same
// work first. The context wins over headers the caller set; those are kept
// when the context says nothing.
//
// # Retries
//
// A request is retried only if sending it twice is harmless: an idempotent
// method (GET, HEAD, OPTIONS, PUT, DELETE) or an Idempotency-Key header,
// and a body that can be replayed (Request.GetBody). Only answers that ask
// for a retry are retried: 503 and 429, and connection errors that happened
// before anything was written. Retries are bounded three ways:
//
//   - per request: at most MaxAttempts attempts (3), so one request costs
//     at most 3x;
//   - per Transport: a retry budget, retries <= max(RetryRatio * requests,
//     RetryMinRate * RetryWindow) over RetryWindow (10%, 3 a second, 10 s),
//     so a quiet client can still retry but however many requests fail, a
//     busy one adds at most 10% load, not 200%;
//   - in time: the wait is the server's Retry-After when given (stretched by
//     up to 10% so that clients shed together do not return together),
//     otherwise exponential backoff with full jitter,
//     wait = rand[0,1) * min(BackoffCap, BackoffBase * 2^(retry-1)), 100 ms
//     and 5 s. A wait that would pass the context's deadline, or a
//     Retry-After longer than MaxWait, is not waited out: the last response
//     or error is returned at once.
//
// A shed response that is retried is drained and closed; the one returned
// is left for the caller. Retry at one layer only: a Transport under a
// client library that retries too multiplies the attempts again.
//
// # Adaptive throttling
//
// Per destination host, over ThrottleWindow (2 minutes, in 60 buckets) the
// Transport counts requests (every attempt, including those it rejects
// itself) and accepts (responses other than 503 and 429; an error is not an
// accept, except a cancellation by the caller, which says nothing about the
// host), and rejects an attempt locally, before sending, with probability
//
//	p = max(0, (requests - K*accepts) / (requests + 1)),  K = 2
//
// (Google SRE, "Handling Overload"), capped at ThrottleMaxProbability (0.8).
// While the host accepts at least 1/K of what it is sent, p is 0; beyond
// that, the client sends about K times what the host accepts and fails the
// rest without a round trip, so a host that sheds most of its load is
// relieved of most of the retries and hopeless requests, without any
// coordination. The cap is Envoy's: rejected requests count as requests,
// so a client that sends a fraction q of its requests settles at
// p = 1 - 2q even once the host accepts everything, and q only doubles per
// window; uncapped, a one-minute outage keeps a client at 10 requests a
// second away for 14 minutes, capped for three. Below ThrottleMinRate
// requests per second (0.2) nothing is rejected: with a handful of requests
// one failure would shut a quiet client out for the whole window (Envoy's
// admission control added a minimum rate for this). Rejections wrap
// ErrThrottled.
//
// # Circuit breaker
//
// Per host, the breaker tells a failing host from a shedding one. Failures
// are connection errors and timeouts, 502, 504, and 503 without
// Retry-After; a 503 with Retry-After or a 429 is a live host managing its
// load, which the throttle handles. The breaker opens after
// BreakerFailures (5) consecutive failures, or when at least BreakerRatio
// (50%) of at least BreakerMinRequests (20) results over BreakerWindow
// (10 s) failed. BreakerOpen, it fails attempts at once with ErrCircuitOpen for
// BreakerCooldown (5 s); then it is half-open and lets BreakerProbes (3)
// attempts through at once: the first success closes it, a failure opens
// it again. Results of attempts sent before a transition are ignored.
// Probes skip the throttle, and a breaker that closes resets the host's
// throttle: its counts describe an outage that is over, and would
// otherwise refuse the probes and hold the recovered host back. The
// throttle covers busy clients, whose counts mean something; the breaker
// also covers quiet ones, which the throttle's minimum rate exempts.
//
// # Order
//
// For every attempt: the deadline, then the breaker, then the throttle,
// then the base RoundTripper. Local rejections are never retried.
//
// Stats returns the counters and each host's state for metrics.
package client
