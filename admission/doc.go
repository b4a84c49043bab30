// Package admission decides which requests run now, which wait, and which
// are turned away, so that a server past its capacity keeps serving at
// capacity instead of collapsing.
//
// # The three layers
//
// Three layers of defence against overload, in one Controller:
//
//   - How much to admit: a concurrency limit computed by a limit.Algorithm
//     (limit.Auto by default; fixed, a saturation AIMD, an RTT gradient)
//     and enforced hard. In-flight work never exceeds the limit in force at admission:
//     the admission state (in flight, limit, and a "someone waits" bit) is
//     one atomic word. The fast path takes its slots with a single atomic
//     add and keeps them only if the sum it gets back is within the limit
//     and nobody waits; otherwise it undoes the add as a release would
//     (handing the slots on if a waiter can use them) and queues. While a
//     slot is free and nobody waits, Acquire and Release are one atomic add
//     each (and a striped counter), take no lock and allocate nothing. The
//     same add numbers the request, and decides whether it is timed:
//     timing (a clock read in Acquire and one in Done, and the sample's
//     atomics) costs several times the rest, so a Controller times every
//     request while they are few (below 2048 a sample window), and a
//     sample of one in 2^k once they are many, each sample standing for
//     2^k requests (limit.Sample.Weight) and leaving a window at least
//     1024. An Untimed Request is never timed.
//   - Whom to serve next: a bounded queue with direct hand-off (a freed slot
//     goes to the queue's choice, never back to a pool where a newcomer
//     could overtake). The queue serves priority classes highest first, with
//     a guaranteed minimum share for each lower class; within a class,
//     tenants share by start-time fair queuing weighted by tenant and request
//     cost; within a tenant, first come first served (newest first while a
//     queue stands, with AdaptiveLIFO). Tenant keys not served recently
//     (Options.MaxTrackedTenants bounds the memory) wait together, as one
//     newcomer with no head start, so a fresh key per request claims one
//     share, not one each.
//   - When to shed: at once when the queue is full (the heaviest tenant of
//     the lowest class loses its newest request, to a 503 or, when other
//     tenants are being served, a 429), when the process is saturated, when
//     a request cannot finish before its deadline; after waiting, at the
//     queue timeout; and when the queue stands (CoDel's judgement of
//     sojourn time, passed on the request it would shed, the oldest of the
//     heaviest tenant in the lowest class: a burst that drains is never
//     punished, and a noisy tenant's backlog cannot age unseen). Under
//     overload the queue may stand only as deep as the slots' own
//     randomness makes it; at or below capacity (calm), 250 ms, so that a
//     queue standing by chance or through a stall is served, not shed.
//
// Every waiter leaves the queue exactly once, with one outcome: granted,
// shed with a Reason, or cancelled (its caller gave up: removed silently,
// and a slot granted to it in the same instant is handed on).
//
// # Use
//
// Middleware wraps an http.Handler: the slot is held until ServeHTTP
// returns, released on panic too, and shed requests get WriteShed's 503 (or
// 429) with Retry-After and a Sluice-Shed header naming the reason. A
// Classifier maps requests to their class, tenant, cost and deadline, and
// believes the Sluice-Priority, Sluice-Tenant and Sluice-Timeout headers only
// from trusted peers. Options.Quota adds a rate limit per tenant, asked
// before a request may take or wait for a slot (ReasonQuota, a 429 whose
// Retry-After is the quota's; package quota implements it across
// instances). Around any other unit of work, call Acquire and give
// the Permit back with Release or Done (Done feeds the limit algorithm a
// latency sample); a caller that never calls Done sets Request.Untimed.
//
// # Concurrency
//
// Lock order: Controller.mu, then nothing; the limit algorithm is never
// called with it held. Helpers that need it are suffixed Locked. The
// Controller owns one goroutine, the sample-window loop, which Close stops
// and waits for. There is no package-level mutable state.
package admission
