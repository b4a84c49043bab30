package quota

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// Limit is a tenant's quota.
type Limit struct {
	// Rate is the requests per second a tenant may make, summed over every
	// instance sharing the store. Required: > 0.
	Rate float64
	// Burst is how many requests a tenant may make at once above the rate.
	// Zero means one second's worth of Rate (at least 1).
	Burst int
}

func (l Limit) withDefaults() Limit {
	if l.Burst == 0 {
		l.Burst = max(1, int(math.Ceil(l.Rate)))
	}
	return l
}

func (l Limit) validate(name string) error {
	var errs []error
	if !(l.Rate > 0 && l.Rate <= maxRate) { // also NaN
		errs = append(errs, fmt.Errorf("quota: %s.Rate = %v: must be in (0, %v]", name, l.Rate, float64(maxRate)))
	}
	if l.Burst < 0 || l.Burst > maxBurst {
		errs = append(errs, fmt.Errorf("quota: %s.Burst = %d: must be in [0, %d] (0: one second's worth)", name, l.Burst, maxBurst))
	}
	return errors.Join(errs...)
}

// The bounds of a Limit: a rate whose emission interval a microsecond
// clock still tells apart, and a burst the local counters hold with room.
const (
	maxRate  = 1e6
	maxBurst = 1 << 30
)

// Options configure a Limiter. Store and Limit.Rate are required; the zero
// value of every other field has a default.
type Options struct {
	// Store is the state shared with the other instances (required):
	// redisquota.Store, or a MemoryStore for one instance alone.
	Store Store
	// Limit is the quota of the requests that name none (Request.Quota "").
	Limit Limit
	// Limits are the named quotas (a route's own, Request.Quota); a
	// request naming one not here is counted under Limit, with the
	// requests that name none (as a route given a quota by a reload is,
	// until a restart). Names may not contain ':'.
	Limits map[string]Limit
	// Exempt are the priorities never limited (health checks, critical
	// traffic a route marks critical-plus).
	Exempt []admission.Priority

	// Interval is the period of the leases from the store. Zero means
	// 100 ms. Shorter follows a tenant's demand more closely, and costs the
	// store more calls.
	Interval time.Duration
	// Timeout bounds each call to the store. Zero means 250 ms.
	Timeout time.Duration
	// Instances, when > 0, is the number of instances sharing the store,
	// fixed. Zero means counted from the heartbeats in the store.
	Instances int
	// Heartbeat is the period of this instance's heartbeat in the store;
	// an instance is counted for three periods after its last. It is also
	// how soon a store that failed is found back with no tenant asking.
	// Zero means 1 s.
	Heartbeat time.Duration
	// ID names this instance in the store's heartbeats. Zero means random.
	ID string
	// MaxTracked bounds the tenants tracked at once (32 at least). Zero
	// means 10000.
	MaxTracked int
	// IdleTimeout is how long a tenant with no request is tracked. Zero
	// means 10 s.
	IdleTimeout time.Duration
	// Logger receives the store's failure and return, once each. nil means
	// no logging.
	Logger *slog.Logger
}

// Validate reports every invalid field of o, one error each (errors.Join).
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("quota: "+format, args...)) }
	if o.Store == nil {
		bad("Options.Store is required")
	}
	if err := o.Limit.validate("Options.Limit"); err != nil {
		errs = append(errs, err)
	}
	for name, l := range o.Limits {
		if name == "" || strings.Contains(name, ":") {
			bad("Options.Limits[%q]: a name is not empty and has no ':'", name)
		}
		if err := l.validate(fmt.Sprintf("Options.Limits[%q]", name)); err != nil {
			errs = append(errs, err)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Interval", o.Interval}, {"Timeout", o.Timeout}, {"Heartbeat", o.Heartbeat}, {"IdleTimeout", o.IdleTimeout}} {
		if d.v < 0 {
			bad("Options.%s = %v: must not be negative (0: the default)", d.name, d.v)
		}
	}
	if o.Instances < 0 {
		bad("Options.Instances = %d: must not be negative (0: from heartbeats)", o.Instances)
	}
	if o.MaxTracked < 0 {
		bad("Options.MaxTracked = %d: must not be negative (0: the default)", o.MaxTracked)
	}
	return errors.Join(errs...)
}

func (o Options) withDefaults() Options {
	if o.Interval == 0 {
		o.Interval = 100 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 250 * time.Millisecond
	}
	if o.Heartbeat == 0 {
		o.Heartbeat = time.Second
	}
	if o.MaxTracked == 0 {
		o.MaxTracked = 10000
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = 10 * time.Second
	}
	if o.ID == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		o.ID = hex.EncodeToString(b[:])
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// Limiter is a tenant rate limit shared through a Store: an
// admission.Quota. Create it with New and run its leases with Run; until
// Run starts, each tenant gets its credit alone. Take is safe for
// concurrent use, takes no lock but a shard's read lock for a tenant it
// tracks already, and allocates nothing then.
type Limiter struct {
	o      Options
	epoch  time.Time
	exempt [4]bool // by priority, Sheddable first
	def    *limitState
	named  map[string]*limitState
	t      tenants

	instances   atomic.Int64 // from heartbeats; >= 1
	storeDown   atomic.Bool
	storeErrors atomic.Uint64
	allowed     atomic.Uint64 // summed by the leases from the buckets
	rejected    atomic.Uint64
}

var _ admission.Quota = (*Limiter)(nil)

// limitState is a Limit and the credit each instance gives a tenant's
// requests before the store has counted them: burst / (4 x instances), at
// least 1, changing with the count of instances.
type limitState struct {
	Limit
	credit atomic.Int64
}

// New returns a Limiter. Call Run to lease from the store.
func New(o Options) (*Limiter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	l := &Limiter{o: o, epoch: time.Now(), def: newLimitState(o.Limit), named: make(map[string]*limitState, len(o.Limits))}
	for name, lim := range o.Limits {
		l.named[name] = newLimitState(lim)
	}
	for _, p := range o.Exempt {
		l.exempt[prioIndex(p)] = true
	}
	l.t.init(o.MaxTracked)
	l.instances.Store(1)
	l.setInstances(l.instanceCount())
	return l, nil
}

func newLimitState(lim Limit) *limitState {
	s := &limitState{Limit: lim.withDefaults()}
	s.credit.Store(1)
	return s
}

func prioIndex(p admission.Priority) int {
	return int(min(max(p, admission.Sheddable), admission.CriticalPlus) - admission.Sheddable)
}

// Take implements admission.Quota: it takes one of the local tokens of
// req's tenant, or of its credit.
func (l *Limiter) Take(req admission.Request) (bool, time.Duration) {
	if l.exempt[prioIndex(req.Priority)] {
		return true, 0
	}
	q, lim := req.Quota, l.def
	if q != "" {
		if lim = l.named[q]; lim == nil {
			q, lim = "", l.def
		}
	}
	b := l.t.find(q, req.Tenant)
	if b == nil {
		b = l.t.add(q, req.Tenant, lim)
	}
	if b.avail.Add(-1) >= -b.lim.credit.Load() {
		b.used.Add(1)
		return true, 0
	}
	b.avail.Add(1)
	b.denied.Add(1)
	return false, l.retryAfter(b)
}

// retryAfter is when b's next request would be accepted: when the store
// said its next token comes, and the debt paid, or at the next lease.
func (l *Limiter) retryAfter(b *bucket) time.Duration {
	d := time.Duration(b.retryAt.Load()) - time.Since(l.epoch)
	return max(d, l.o.Interval)
}

// instanceCount is the number of instances sharing the store: configured,
// or the last count the heartbeats gave.
func (l *Limiter) instanceCount() int64 {
	if l.o.Instances > 0 {
		return int64(l.o.Instances)
	}
	return l.instances.Load()
}

// setInstances sets each limit's credit for n instances.
func (l *Limiter) setInstances(n int64) {
	set := func(s *limitState) { s.credit.Store(max(1, int64(s.Burst)/(4*n))) }
	set(l.def)
	for _, s := range l.named {
		set(s)
	}
}

// Stats is a snapshot of a Limiter's counters.
type Stats struct {
	// Allowed and Rejected count requests within and over quota (exempt
	// ones are not counted), as of the last lease.
	Allowed  uint64 `json:"allowed"`
	Rejected uint64 `json:"rejected"`
	// StoreUp is false while the store's calls fail: the Limiter then
	// fails open to rate / Instances per tenant.
	StoreUp bool `json:"storeUp"`
	// StoreErrors counts failed calls to the store.
	StoreErrors uint64 `json:"storeErrors"`
	// Instances is the number of instances the rate is shared by when the
	// store fails.
	Instances int `json:"instances"`
	// Tenants is the number of tenants tracked.
	Tenants int `json:"tenants"`
}

// Stats returns a snapshot of l's counters.
func (l *Limiter) Stats() Stats {
	return Stats{
		Allowed:     l.allowed.Load(),
		Rejected:    l.rejected.Load(),
		StoreUp:     !l.storeDown.Load(),
		StoreErrors: l.storeErrors.Load(),
		Instances:   int(l.instanceCount()),
		Tenants:     l.t.len(),
	}
}
