package admission

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// Options configure a Controller. The zero value is usable: a limit that
// finds itself (limit.Auto), a FIFO queue of 100 with a 5 s timeout, no
// saturation signal.
type Options struct {
	// Limit computes the concurrency limit. nil means limit.Auto with its
	// defaults: never below the usable CPUs, cut at once when CPU-bound
	// handlers oversubscribe them, grown while the CPUs are idle, bounded
	// where the RTT shows a downstream's cap. The Controller calls its
	// Observe for every timed Permit.Done (see SampleWindow) and its Tick
	// once every SampleWindow.
	Limit limit.Algorithm

	// QueueSize bounds the number of waiting requests: a request that
	// finds the queue full is shed with ReasonQueueFull (or displaces a
	// less important one). Negative means no queue: a request over the
	// limit is shed at once with ReasonLimit.
	//
	// Zero means sized to the service: as many requests as the slots serve
	// in half a second (the limit over the smoothed service time, by
	// Little's law), at least 100 and at most 4,096, re-read at each
	// request queued. A fixed count is a bound on time only at one
	// throughput: 100 requests are 300 ms at 330 a second but 50 ms at
	// 2,000, and a count bound that binds before the sojourn rules (CoDel's
	// 250 ms at or below capacity) sheds bursts that the slots would have
	// served. Half a second is twice that: the count bounds memory, the
	// sojourn rules decide; Stats.QueueBound shows the bound in force.
	QueueSize int

	// QueueTimeout bounds how long a request waits for a slot before it is
	// shed with ReasonQueueTimeout. Zero means 5 s; negative means no
	// timeout (the caller's context still applies).
	QueueTimeout time.Duration

	// Signal is the process's saturation signal; nil means none, or with
	// no Limit either, the default limit.Auto's (the CPUs oversubscribed:
	// goroutines waiting for a P). While it
	// is above MaxSaturation, requests that would have to wait are shed at
	// once with ReasonSaturated instead of queueing: queueing behind a
	// saturated process only adds latency. With CoDel, only while CoDel
	// judges the queue standing: at about capacity a CPU-bound process is
	// saturated nearly all the time, and a burst's requests are served
	// from a calm queue a moment later.
	Signal limit.Signal

	// MaxSaturation is the saturation above which waiting is refused.
	// Zero means 0.95: close to full, so that the signal's noise alone does
	// not refuse waiting, but short of it, since a fully saturated process
	// serves a queue no faster.
	MaxSaturation float64

	// SampleWindow is the period of the limit algorithm's Tick and of the
	// per-window log records. Zero means the algorithm's own window if it
	// has one (limit.Paced: 100 ms for limit.Auto), else 1 s; negative
	// disables the background loop (Tick is then never called, and an Auto
	// limit stays at its floor).
	//
	// The loop also sets how many requests are timed: every one while the
	// timed requests given back number fewer than 2048 a window; above,
	// one in 2, 4, ... up to 1024, so that a window still gets at least
	// 1024 samples, each of limit.Sample.Weight the requests it stands
	// for. Without the loop every request is timed.
	SampleWindow time.Duration

	// SmoothingFactor is the weight of a new sample in the smoothed
	// latency (an EWMA). Zero means 0.2.
	SmoothingFactor float64

	// Logger receives limit changes and per-window shed counts. nil means
	// no logging.
	Logger *slog.Logger

	// MinShare is the share of dispatches each lower priority class is
	// guaranteed while higher classes wait, in [0, 1). Zero means strict
	// priority: a lower class waits for as long as a higher one queues.
	MinShare float64

	// TenantWeight returns a tenant's weight in the fair share of its
	// class; nil, or a result <= 0, means 1.
	TenantWeight func(tenant string) float64

	// MaxQueuedPerTenant caps the requests one tenant may have queued in
	// a class (ReasonTenant above it). Zero means no cap beyond fairness.
	MaxQueuedPerTenant int

	// MaxTrackedTenants bounds the tenants the queue remembers as served
	// recently, whatever keys clients send. A tenant it does not remember
	// (and that has no TenantWeight) waits with the newcomers, one flow
	// shared by every unproven key, until one of its requests is served,
	// so that fresh keys cannot each claim a share. Zero means
	// DefaultMaxTrackedTenants.
	MaxTrackedTenants int

	// CoDelTarget enables sojourn-time shedding: at each dispatch the
	// request the queue would shed (the oldest of the heaviest tenant in
	// the lowest waiting class) is judged; once such sojourns have stayed
	// at or above the target for a whole CoDelInterval, the queue stands,
	// and until it empties every such request that waited that long is
	// shed: ReasonTenant (429) when other tenants of its class wait or
	// were just served, since its tenant's backlog is what stands, else
	// ReasonCoDel. Zero disables CoDel. 5 ms, CoDel's own recommendation
	// (RFC 8289), suits services answering in a few milliseconds. For
	// slower ones the Controller raises it to what the queue's own
	// randomness makes stand, from the mean service time S and the limit
	// N: S x max(12/N, 2 sqrt(12/N)), about twelve requests' worth with
	// few slots, under one service time with sixty. That threshold holds
	// under overload (in the last 100 ms, more than a fifth of the
	// arrivals shed, or two fifths not admitted); otherwise, at or below
	// capacity, a queue stands only past 250 ms, so that a queue left by
	// chance or by a stall is served rather than shed.
	CoDelTarget time.Duration

	// CoDelInterval is CoDel's window. Zero means 100 ms.
	CoDelInterval time.Duration

	// AdaptiveLIFO serves each tenant's newest request first while the
	// queue stands under overload (sojourn above CoDel's threshold, in
	// CoDel's overloaded regime; requires CoDel): the oldest are the
	// likeliest to have been given up on ("Fail at Scale"). With CoDel
	// shedding a standing queue's excess in either order, it keeps the
	// same goodput and the served wait little, where first in, first out
	// serves each one when it has waited nearly CoDel's threshold. Calm,
	// at or below capacity, the queue is served in order even so: newest
	// first would leave all of a drift's or a stall's backlog to age past
	// the threshold and be shed, where in order only what passes it is.
	// sluice's configuration turns it on by default.
	AdaptiveLIFO bool

	// Quota, when set, is asked before each request may take or wait for
	// a slot; a request over its tenant's quota is shed with ReasonQuota.
	// nil means no quota: Acquire then costs nothing more.
	Quota Quota
}

// Validate reports every invalid field of o, one error each
// (errors.Join). Zero values are valid: they mean the defaults New
// applies; so are the negative QueueSize, QueueTimeout and SampleWindow
// that switch a feature off.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf("admission: "+format, args...)) }
	if !(o.MaxSaturation >= 0 && o.MaxSaturation <= 1) { // also NaN
		bad("MaxSaturation %v must be in (0, 1] (0: the default)", o.MaxSaturation)
	}
	if !(o.SmoothingFactor >= 0 && o.SmoothingFactor <= 1) {
		bad("SmoothingFactor %v must be in (0, 1] (0: the default)", o.SmoothingFactor)
	}
	if !(o.MinShare >= 0 && o.MinShare < 1) {
		bad("MinShare %v must be in [0, 1)", o.MinShare)
	}
	if o.MaxQueuedPerTenant < 0 {
		bad("MaxQueuedPerTenant %d must not be negative (0: no cap)", o.MaxQueuedPerTenant)
	}
	if o.MaxTrackedTenants < 0 {
		bad("MaxTrackedTenants %d must not be negative (0: the default)", o.MaxTrackedTenants)
	}
	if o.CoDelTarget < 0 {
		bad("CoDelTarget %v must not be negative (0: no CoDel)", o.CoDelTarget)
	}
	if o.CoDelInterval < 0 {
		bad("CoDelInterval %v must not be negative (0: the default)", o.CoDelInterval)
	}
	return errors.Join(errs...)
}

// withDefaults returns o with every zero field replaced by its default.
func (o Options) withDefaults() Options {
	if o.QueueTimeout == 0 {
		o.QueueTimeout = 5 * time.Second
	}
	if o.MaxSaturation == 0 {
		o.MaxSaturation = 0.95
	}
	if o.SmoothingFactor == 0 {
		o.SmoothingFactor = 0.2
	}
	if o.Limit == nil {
		o.Limit, o.Signal = defaultLimit(o.Signal)
	}
	if o.SampleWindow == 0 {
		o.SampleWindow = defaultWindow(o.Limit)
	}
	if o.CoDelInterval == 0 {
		o.CoDelInterval = 100 * time.Millisecond
	}
	return o
}
