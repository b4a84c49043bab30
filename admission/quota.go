package admission

import (
	"errors"
	"math"
	"time"
)

// Quota limits each tenant's rate of requests, where the Controller's
// limit bounds how many run at once. The Controller asks it first, before
// a request may take or wait for a slot: a request over its tenant's quota
// is shed at once with ReasonQuota (429) and never reaches the handler.
//
// The package github.com/sluicehq/sluice/quota implements it with local
// token buckets that lease their tokens from a store shared by several
// instances (quota/redisquota keeps them in Redis).
type Quota interface {
	// Take asks for one request of req.Tenant under the limit req.Quota
	// names. It reports whether the request may proceed and, when not,
	// how long until one of that tenant's requests would be accepted.
	//
	// REQUIRES: it returns at once (no network round trip, no wait for a
	// lock held across one) and is safe for concurrent use: the
	// Controller calls it on every request's path.
	Take(req Request) (ok bool, retryAfter time.Duration)
}

// maxQuotaRetry bounds the Retry-After a quota shed carries: one
// preallocated error per whole second up to it keeps quota sheds free of
// allocations.
const maxQuotaRetry = 3600

var quotaErrors = func() []*ShedError {
	es := make([]*ShedError, maxQuotaRetry+1)
	for s := range es {
		es[s] = &ShedError{Reason: ReasonQuota, RetryAfter: time.Duration(max(s, 1)) * time.Second}
	}
	return es
}()

// shedQuota counts a quota shed and returns its error, carrying retry
// rounded up to whole seconds (at least 1, at most an hour).
func (c *Controller) shedQuota(retry time.Duration) error {
	c.shedCount[ReasonQuota].Add(1)
	secs := math.Ceil(retry.Seconds())
	if !(secs <= maxQuotaRetry) { // also NaN
		secs = maxQuotaRetry
	}
	return quotaErrors[int(max(secs, 1))]
}

// RetryAfterFor is the Retry-After for a request Acquire refused with err:
// the time the refusal itself names (a quota's), else RetryAfter.
func (c *Controller) RetryAfterFor(err error) time.Duration {
	var se *ShedError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		return se.RetryAfter
	}
	return c.RetryAfter()
}
