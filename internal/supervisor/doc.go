// Package supervisor runs the worker processes that sluice fronts (Node.js
// SSR renderers, or anything that speaks HTTP) and tells the proxy which of
// them may receive traffic. Static does the second half for upstreams that
// sluice does not start, from active health checks.
//
// Both report to a Balancer, which the proxy implements: Add (route to this
// endpoint), Drain (stop routing to it and wait for its in-flight requests),
// Remove (it is gone). The proxy owns the queue and the dispatch; this
// package owns the processes' lives.
//
// # A worker's life
//
// Count slots each hold one worker at a time. A worker is one process
// incarnation with an ID that is never reused:
//
//	        spawn          check passes        warm-up done
//	slot ---------> starting ------------> warming ------------> ready
//	                   |                      |                    |   Balancer.Add:
//	                   | fails, or            | fails              |   traffic flows
//	                   | StartTimeout: KILL   |        crash       |
//	                   v                      v  <-----------------+ RollingRestart
//	                exited <------------------+                    | or Shutdown
//	                   ^                                           v
//	                   |                                       draining   Balancer.Drain:
//	                   |                                           |      in-flight finish
//	                   | reaped: Balancer.Remove                   v
//	                   +------------------------------------- stopping    SIGTERM; SIGKILL
//	                                                                      after StopTimeout
//
// An exit sluice did not ask for sends the slot through the backoff to a
// new worker; an exit it asked for (rolling restart, shutdown) does not.
//
// A worker learns where to listen from its environment: PORT (a free port
// on 127.0.0.1) or SLUICE_SOCKET (a socket path in a private directory),
// plus SLUICE_WORKER_ID (its ID) and SLUICE_WORKER_SLOT (its slot, 0 to
// Count-1). It is ready when a GET of Options.ReadyPath answers 2xx (or, with
// no path, when a connection opens), and then receives
// Options.WarmupRequests requests before any traffic: a cold process (no
// JIT, empty caches) that meets full load at once is what made Airbnb's
// deploys time out.
//
// # Restarts and the crash-loop guard
//
// A worker that exits unexpectedly (or fails to start) is Removed at once
// and its slot restarted after an exponential backoff, from BackoffMin to
// BackoffMax with jitter, reset when the worker had served for
// StableAfter. More than CrashLoopExits such exits within CrashLoopWindow
// across all slots trip the crash-loop guard: restarts pause, an Error is
// logged and Ready turns false, so that sluice's readiness takes the
// instance out of its load balancer. The workers still alive keep
// serving. The pause lasts CrashLoopWindow, twice as long for each trip
// that follows the last pause closely (up to maxCrashLoopPause); then the
// guard re-arms by itself and every empty slot restarts: a transient cause
// (a database away for a minute) heals without an operator, a broken
// deploy costs a few restarts an hour. RollingRestart (after deploying a
// fix) clears the guard at once and refills every slot. Liveness
// (/__sluice/health) does not follow the guard: restarting sluice would
// restart the same workers, which the supervisor does anyway.
//
// The guard is for a command that fails, not for a request that kills: a
// client must not be able to pause every restart by sending the same
// poisonous request a few times. When the Balancer is a Witness (the
// proxy is), the supervisor asks it about each unexpected exit of a
// worker it was given; a worker that had answered requests and died
// holding some is restarted like any other, but its exit is not counted
// by the guard (Stats.RequestExits counts it). A worker that dies before
// it is ready, holding nothing, or on the first request it was given
// still counts: that is what a broken command looks like.
//
// A worker the proxy found hung (silent past its budget and grace while
// holding a slot) is killed with Kill: SIGKILL to its group, then the same
// path as a crash.
//
// # Rolling restart and shutdown
//
// RollingRestart replaces one slot at a time: new worker started, ready,
// warmed, Added; old worker Drained, then stopped. Capacity never drops
// below Count and no request is cut (under RollReplace, one slot's worker
// is stopped before its replacement starts). The next slot begins once
// Options.Settled reports that the front has served what the last start
// held up. Shutdown Drains every worker, then
// stops them all: SIGTERM, and SIGKILL after StopTimeout or at ctx's
// deadline. Cancelling Run's ctx stops the workers without draining.
//
// The sluice command wires signals to these: SIGTERM or SIGINT begin the
// drain sequence that ends with Shutdown; SIGHUP calls RollingRestart.
// Workers run in their own process groups, so a terminal's Ctrl-C or a
// container runtime's signal to sluice's group reaches sluice alone, which
// stops them in order; Signal forwards anything else (say SIGUSR2).
//
// # No orphans
//
// Every signal goes to the worker's whole process group, so a worker
// started through a shell or npm takes its children with it; when a
// worker's main process exits, whatever it left in its group is killed.
// If sluice itself is killed with SIGKILL, Linux kills the workers through
// their parent-death signal (Pdeathsig). That signal follows the OS thread
// that forked the worker, not the process (Go issue #27505), so every
// worker is forked from one goroutine locked to its thread for the whole
// life of the supervisor (see spawner). It reaches the worker's main
// process only: an `sh -c` or `npm start` worker's server would outlive
// sluice. With Options.Guard (sluice sets its own binary) each worker runs
// under a guard process that kills the worker's whole group when sluice
// dies, by any means, on any unix (see GuardMain); sluice warns at start
// when it cannot find its executable to use as the guard. A descendant
// that leaves the process group (setsid) is beyond reach: nothing can
// promise more. When
// sluice runs as PID 1 in a container it does not reap processes that are
// not its own children: run it under an init (docker run --init, tini).
//
// # Testing
//
// Everything the supervisor does to the outside world goes through an env
// (start a process, check an endpoint, pick a port, draw a random number),
// the seam cloudflare/tableflip uses: the package's tests replace it with
// fake processes whose exits they control, under testing/synctest.
package supervisor
