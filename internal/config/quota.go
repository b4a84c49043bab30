package config

import (
	"fmt"
	"hash/fnv"
	"net/url"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// Quota is a rate limit per tenant (quota.Limiter): a request over it gets
// 429 and never reaches a worker.
type Quota struct {
	// Rate is the requests per second each tenant may make, over every
	// instance sharing Store; > 0.
	Rate float64 `yaml:"rate"`
	// Burst is how many requests a tenant may make at once above the rate;
	// 0 = one second's worth of Rate.
	Burst int `yaml:"burst"`
	// Store is where the instances share their counts: "local" (this
	// instance alone), redis://[user:password@]host:port/db, rediss://
	// (TLS), redis+cluster://, redis+sentinel://...?master_name=NAME.
	Store string `yaml:"store"`
	// Exempt are the priorities never limited (header forms).
	Exempt []string `yaml:"exempt"`
	// Instances fixes how many instances share the rate when the store
	// fails; 0 = counted from their heartbeats in the store.
	Instances int `yaml:"instances"`
	// Interval is how often quota is leased from the store.
	Interval time.Duration `yaml:"interval"`
	// Timeout bounds each call to the store.
	Timeout time.Duration `yaml:"timeout"`
}

// RouteQuota is a route's own rate and burst per tenant, replacing
// tenants.quota's for its requests (counted apart from other routes').
type RouteQuota struct {
	// Rate is the requests per second; > 0.
	Rate float64 `yaml:"rate"`
	// Burst is the requests at once above the rate; 0 = one second's worth.
	Burst int `yaml:"burst"`
}

func (q *Quota) setDefaults() {
	*q = Quota{Store: QuotaStoreLocal, Interval: 100 * time.Millisecond, Timeout: 250 * time.Millisecond}
}

// QuotaStoreLocal is tenants.quota.store for an instance alone.
const QuotaStoreLocal = "local"

func (v *validator) tenantQuota(q *Quota) {
	const at = "tenants.quota"
	v.quotaRate(at, q.Rate, q.Burst)
	if q.Store != QuotaStoreLocal && !validStoreURL(q.Store) {
		v.errorf(at+".store", "%s is not a store (want local or a redis://, rediss://, redis+cluster:// or redis+sentinel:// URL)", shownURL(q.Store))
	}
	for i, p := range q.Exempt {
		if _, err := admission.ParsePriority(p); err != nil {
			v.errorf(fmt.Sprintf(at+".exempt[%d]", i), "%q is not a priority (want %s)", p, priorityList())
		}
	}
	v.positive(at+".interval", q.Interval)
	v.positive(at+".timeout", q.Timeout)
}

// routeQuota checks route r's own quota at path at.
func (v *validator) routeQuota(at string, r *Route) {
	if r.Quota == nil {
		return
	}
	v.quotaRate(at+".quota", r.Quota.Rate, r.Quota.Burst)
	if !v.quota {
		v.errorf(at+".quota", "tenants.quota is not set: a route's quota replaces its rate and burst, and shares its store")
	}
}

// quotaRate checks a quota's rate and burst at path.
func (v *validator) quotaRate(path string, rate float64, burst int) {
	if !(rate > 0 && rate <= 1e6) {
		v.errorf(path+".rate", "%v is not a rate in (0, 1000000] requests per second", rate)
	}
	if burst < 0 || burst > 1<<30 {
		v.errorf(path+".burst", "%d is not a burst in [0, %d] (0: one second's worth of rate)", burst, 1<<30)
	}
}

func validStoreURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return false
	}
	switch u.Scheme {
	case "redis", "rediss", "redis+cluster", "rediss+cluster", "redis+sentinel", "rediss+sentinel":
		return true
	}
	return false
}

// shownURL is s quoted for an error, its password hidden.
func shownURL(s string) string {
	if u, err := url.Parse(s); err == nil && u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
			return fmt.Sprintf("%q", u.String())
		}
	}
	if strings.Contains(s, "@") {
		return "the URL (not shown: it may hold a password)"
	}
	return fmt.Sprintf("%q", s)
}

// QuotaName is the name route r's own quota is counted under
// (admission.Rule.Quota, and in the store's keys): a hash of its match,
// so that it stays the route's when routes are added or reordered, and is
// the same on every instance with the same file.
func QuotaName(r *Route) string {
	h := fnv.New64a()
	for _, s := range []string{r.Match.Method, r.Match.PathPrefix, r.Match.Header} {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("route-%016x", h.Sum64())
}
