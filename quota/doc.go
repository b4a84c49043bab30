// Package quota limits each tenant's rate of requests across every instance
// of a service that shares one store, without a round trip to the store on
// any request's path.
//
// A Limiter is an admission.Quota: the Controller asks it before a request
// may take or wait for a slot, and sheds a request over its tenant's quota
// with 429 (admission.ReasonQuota).
//
// # Design
//
// The store keeps one GCRA per (quota, tenant) (the generic cell rate
// algorithm of ATM networks, as redis-cell has it): a theoretical arrival
// time that advances by 1/rate per request and may run at most burst/rate
// ahead of now. Instead of asking it once per request, each instance keeps
// a local token bucket per tenant and leases tokens from the store in
// batches: every Interval, one Store.Lease call (a pipeline, for Redis)
// asks for each tenant that had requests what it is expected to need until
// the next lease, and its debt (below). A request takes one local token:
// two atomic adds after a map lookup under a read lock.
//
// A tenant an instance has no tokens for yet (its first request there) is
// admitted on credit: at most burst / (4 x instances) requests (at least
// one), which the next lease pays for. Tokens a quiet interval left unused
// are given up but for as many, so that they cannot add much to a later
// burst. The store's burst is lowered by what every instance may admit
// before asking (its credit and its kept tokens), so that the fleet admits
// no more than the tenant's rate, plus its burst once (when the burst is
// at least 4 x instances; with less, each instance still has a credit of
// one).
//
// # When the store is slow or gone
//
// Leases and heartbeats run on the Limiter's own goroutines (Run), each
// call bounded by Timeout, so a slow or unreachable store never delays a
// request. While it fails, each instance fails open to its local share of
// each tenant's rate: rate / instances, the instances counted from the
// heartbeats they keep in the store (or Options.Instances), the last count
// known before the failure; the store is not asked again until a
// heartbeat goes through, so that a store that hangs does not delay the
// local shares. The first failure is logged, and the return; Stats says
// which holds. The store's state is its own again at the first lease
// that succeeds, within a heartbeat and an Interval of its return.
//
// # Memory
//
// Tenants are tracked up to MaxTracked per instance: a tenant idle for
// IdleTimeout is forgotten, and a new tenant past the bound replaces
// another. The store's entries expire once they say nothing (a GCRA whose
// arrival time has passed is the same as none).
package quota
