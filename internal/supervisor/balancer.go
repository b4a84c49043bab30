package supervisor

import "context"

// Endpoint is a worker as the proxy sees it: where to send requests and how
// many it may hold at once.
type Endpoint struct {
	// ID is unique for the life of a Supervisor (or Static): a restarted
	// worker gets a new ID, so a stale ID never names a new process.
	ID int
	// Network is "tcp" or "unix".
	Network string
	// Addr is "127.0.0.1:PORT" for tcp or a socket path for unix.
	Addr string
	// Concurrency is how many requests the worker may hold at once: 1 for
	// a single-threaded renderer. With Adaptive it is the most the worker
	// may ever be given.
	Concurrency int
	// Adaptive asks the proxy to find the worker's limit at run time, in
	// [1, Concurrency], from the saturation the worker reports on its
	// responses or else from its latency.
	Adaptive bool
	// Pid is the worker's process ID when the Supervisor runs it; 0 for a
	// Static upstream. The proxy reads the process's CPU demand from the
	// kernel (package cpudemand) when the worker reports no saturation.
	Pid int
}

// Balancer receives the supervisor's decisions about which endpoints may
// receive traffic. The proxy implements it; the supervisor and Static are
// its only callers.
//
// For one ID the calls arrive in this order, each at most once:
//
//	Add -> [Drain] -> Remove
//
// Add always comes first and has returned before Drain or Remove for the same
// ID is called. Remove follows every Add, once the worker has exited (or, for
// Static, the upstream failed its checks or was shut down). Drain and Remove
// for the same ID may overlap when a draining worker dies: Drain must then
// return promptly. Calls for different IDs may be concurrent.
//
// Implementations must not call back into the Supervisor or Static from these
// methods (they are called from its goroutines, never under its locks, but
// some of its methods wait for them).
//
// The one way back is Supervisor.Kill, for what only the balancer can see:
// a worker that holds a request and never answers (an endless loop). The
// proxy calls it from its own goroutines (proxy.Options.OnHung, wired by
// sluice serve) after taking the worker out of rotation; Remove follows
// once the worker has been reaped, and a successor is Added in its slot.
type Balancer interface {
	// Add makes e eligible for new requests. It must not block.
	Add(e Endpoint)
	// Drain stops routing new requests to id and returns once none are in
	// flight on it, or with ctx.Err() when ctx is done first. The worker is
	// stopped after Drain returns, so a Drain that returns early cuts the
	// requests still running.
	Drain(ctx context.Context, id int) error
	// Remove forgets id at once: its process is gone. Requests still in
	// flight on it fail on their own (a dead socket). It must not block.
	Remove(id int)
}

// Death is what a Witness saw of a worker that died.
type Death struct {
	// Served is how many requests the worker answered in its life.
	Served uint64
	// Held is how many requests it held when it died: sent to it and not
	// answered.
	Held int
}

// A Witness is a Balancer that sees the requests its workers hold; the
// proxy is one. When a worker it was given (Add) exits while sluice was
// not stopping it, the Supervisor asks it, from that worker's goroutine,
// after the process was reaped and before Remove, what the worker was
// doing. Died must not block nor call back into the Supervisor.
//
// A worker that answered requests and then died holding some was most
// likely killed by one of them, not by its command: such an exit restarts
// the slot as any other, but does not count toward the crash-loop guard,
// so that a client sending a poisonous request cannot pause every
// restart (the proxy remembers and refuses the shapes that kill).
type Witness interface {
	Balancer
	Died(id int) Death
}
