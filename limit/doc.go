// Package limit holds concurrency-limit algorithms: pure functions of the
// samples and the time they are given.
//
// An Algorithm answers one question: how many requests may be in flight at
// once right now. The admission Controller enforces the answer; the
// algorithm never sees a request, only two kinds of observation:
//
//   - a Sample for each request that completed (its RTT, whether it was
//     dropped for overload, how many were in flight), via Observe;
//   - a Window once every sample window (the process's saturation, the
//     in-flight count, and the CPU load a Probe measures), via Tick.
//
// Both return the new limit. Time is always a parameter (Sample.Now,
// Window.Now); nothing here reads the clock, sleeps or starts a goroutine,
// so every rule is tested with plain tables. The one exception is the
// Runtime signal, whose Run samples the Go runtime until its context ends.
//
// Observe is called concurrently from every goroutine that completes a
// request; Tick from one goroutine, once per window. Limit is one atomic
// load in every algorithm here. Worker, one worker process's limit inside
// a front, is fed by its caller under the caller's own lock instead.
//
// # Auto: the default, a limit that finds itself
//
// The admission Controller's default when no limit is configured. Every
// window (AutoWindow, 100 ms), with R the mean count of goroutines waiting
// for a P, M the mean in-flight count and B the CPU busy fraction, all
// from the Window (the Controller probes them ten times a window with a
// Probe, off the request path):
//
//	R > max(1, CPUs/4):                 C = min(C, round(M - R))
//	binding, R small, B < 0.9:          C = clamp(ceil(M x 0.9 / B), C+1, 4C)
//	L = max(floor, min(C, D))
//
// floor = the usable CPUs rounded up (GOMAXPROCS or the cgroup quota), or
// Min if higher. Fewer handlers than CPUs cannot oversubscribe them, so an
// I/O-bound service is never throttled below that; once CPU-bound handlers
// outnumber the Ps, the scheduler time-slices them, the goroutines that
// read requests and write responses starve, and the queue forms in unread
// connections. M - R is the concurrency the CPUs actually serve: the limit
// goes there in one window (a cold start or a step from 0.5x to 8x is
// answered in about 100 ms, where AIMD's tenth a window needs half a
// minute to get from 100 to 2). The limit grows only while it binds and the CPUs are
// not oversubscribed: up to fourfold a window while they idle (I/O-bound work), aiming at
// the concurrency the busy fraction projects to fill them as they fill.
// What the CPUs cannot show, a downstream with its own concurrency cap
// (idle CPUs, growing RTT), the delivery bound D shows: the best
// completion rate seen (the last second) times the lowest RTT seen (the
// last 10 s) is the concurrency the pipe serves, the bandwidth-delay
// product BBR steers a TCP connection by. While the limit binds and the
// RTT is past Tolerance x the lowest, D is cut to that product, the knee,
// where nothing waits: the windows after a cut see the no-load RTT again,
// so the record stays true as it rolls (no drift up with the loaded RTT,
// the defect of Gradient2's long-run average); D then grows by a quarter
// (BBR's probing gain; sqrt(D) while that is more) a window while the RTT
// stays within the tolerance. D records nothing while the CPUs are the
// bottleneck (runnable goroutines, or 90% busy): a CPU-bound phase's 10 ms
// RTT paired with the 50 ms of an I/O-bound phase after it would put the
// knee at 2. A cut to the true knee never costs throughput, so every cut
// is verified by the next round: one that lost throughput paired records
// of two different workloads, and is undone, the records dropped. Without
// that check such a bound is self-fulfilling: once it binds, every window
// completes limit/RTT and confirms it. An RTT
// high at or below the knee is either a slower service or a queue at a
// cap that appeared: D halves for a round, and a rate that holds means a
// queue (the old best rate is dropped and the next round cuts to the
// cap), a rate that halves a slower service (D learns it anew, doubling).
// Rounds are windows at one limit summed until they hold 10 samples,
// so that a low limit with a long RTT still moves D. Against a downstream
// that serves 32 at once the limit averages about 42 (45-54 with the noise
// of a shared machine); each shift between CPU-bound and I/O-bound
// handlers, a cap that appears or disappears, and a handler 4x slower or
// faster again, is followed within a second.
//
// What it cannot do: tell the handlers' CPU use from another CPU hog in
// the same process (a batch job's goroutines count as runnable too, and
// keep the limit at its floor while they run), or see a cgroup quota
// below GOMAXPROCS as runnable goroutines (throttled threads look
// running); the floor then follows the quota, and CPUBusy is measured
// against it.
//
// # Fixed
//
// A constant the caller Sets: the number of worker slots, say.
//
// # AIMD: the saturation rule
//
// Every window, with inflight = max(Window.Inflight, Window.PeakInflight):
//
//	saturation >= MaxSaturation and inflight >= L/2:  L = max(Min, floor(0.9 L))
//	otherwise:                                        L = min(Max, L + max(1, ceil(sqrt(L))))
//
// Defaults: Initial = Max (wide open), Min 1, Max 1000, MaxSaturation 0.95.
// A NaN saturation is unknown and counts as below the maximum. A hard
// ceiling (sluice.yaml's maxConcurrentRequests) is applied by the caller as
// Max = min(maxLimit, maxConcurrentRequests); Initial is clamped into
// [Min, Max].
//
// # Gradient: RTT against the no-load RTT
//
// Gradient keeps a baseline, its estimate of the RTT without queueing, and
// steers the limit to where the mean RTT is Tolerance times that:
//
//	g = clamp(Tolerance x baseline / short, 0.5, 1)
//	g < 1:  L = L x (1 - Smoothing x (1 - g))
//	g = 1:  L = 2 L               while short <= baseline x (1 + (Tolerance-1)/4)
//	        L = L + max(1, sqrt(L)) otherwise
//
// clamped to [Min, Max]. Defaults: Initial 100, Min 1, Max 1000, Tolerance
// 1.5, MinSamples 10, Smoothing 0.5. For a CPU-bound service with c cores
// (RTT = s x max(1, L/c)) the limit settles between c and 1.5 c: the knee,
// where more concurrency stops buying throughput and only buys latency
// (Little's law), plus the tolerated queue.
//
// Measurement. short is the mean RTT of an epoch: the windows since the
// limit last changed, so that all its samples saw one limit. An epoch is
// acted on once it holds MinSamples samples and its relative standard
// error is at most 3%; until then the limit holds and the next window adds
// to it (after 60 windows it starts over). Real RTTs are noisy: deciding on
// a window of a few dozen samples lets noise steer the limit, and the
// lowest of many noisy means is far below the true no-load RTT.
//
// The baseline. It is the lowest short seen, and rises only on evidence:
// once the mean in-flight count of an epoch differs by a tenth or more from
// that of a reference epoch, the elasticity of RTT to concurrency,
// e = ln(RTT ratio) / ln(concurrency ratio), tells queueing (e near 1: RTT
// follows concurrency) from a flat RTT (e near 0: the lower concurrency was
// not queueing, so its RTT is a no-load RTT). The pair is judged only when
// the two hypotheses are three standard errors from the boundary e = 1/2
// between them; otherwise the reference stays and a later epoch, further
// away, settles it. A flat verdict trusts the baseline and raises it to the
// flat RTT / Tolerance when that is higher: the service itself got slower
// (lost capacity, a slow dependency), shrinking did not help, and the limit
// now settles at the new knee instead of shrinking to Min. An RTT that moved
// against concurrency (up while it fell) means the service changed between
// the two epochs, and proves nothing.
//
// Starting. Until some pair of epochs has shown a flat RTT, the lowest RTT
// seen may itself be a loaded one (a start above the knee sees only loaded
// RTTs, so a gradient against it would read 1 and grow for ever). The limit
// then walks down, 0.8 L per epoch, waiting for each step to be judged,
// until the RTT stops following it; at Min, the RTT there is the no-load RTT
// by definition. Then slow start doubles the limit while RTT stays within a
// quarter of the tolerance of the baseline.
//
// The defects of the best-known implementations, and what is done here:
//
//   - Netflix Gradient2 grows without bound under modest steady overload
//     (concurrency-limits #134): its long-run RTT is an average over 600
//     samples that drifts up to the overloaded RTT, the gradient tends to 1
//     and the +4 queue allowance wins. Here the baseline never follows the
//     loaded RTT; it rises only on a significant flat verdict, and then
//     only to RTT / Tolerance, so a wrong verdict at the limit the rule
//     settles on (where RTT is already Tolerance x baseline) barely moves it.
//   - Gradient2 ignores drops (#176). Here the first dropped Sample of a
//     window cuts L to 0.9 L at once, in Observe; later drops in the window
//     add nothing, and the window is not used for RTT (its RTTs measure the
//     old limit, a dropped request's RTT measures the timeout).
//   - A gradient alone grows a limit nobody reaches: under light load RTT
//     is at its best and g reads 1 (Envoy's filter has no check; Gradient2
//     holds below L/2). Here a window whose peak in-flight count is below
//     L/2 holds L, neither growing into unused space nor shrinking on RTTs
//     that say nothing about the limit.
//   - Gradient2 starts at 20 and rejects traffic after every deploy. Here
//     Initial defaults to 100 and takes the previous process's last limit.
//   - Envoy's filter re-measures the no-load RTT by pinning the limit to 3
//     for 50 requests, with 503s every time (envoy #8337). Here nothing
//     pins: the baseline is learnt from the limit's own movements and the
//     walk down at start is gradual and judged step by step.
//
// What no RTT rule can do: tell a slower service from a busier one within a
// single epoch, or follow a change of workload mix (fast routes giving way
// to slow ones) that the mean RTT reads as congestion. Auto uses it only as
// an upper bound, for what the CPU load cannot show.
//
// # Worker: one worker process's limit, from its reports or its throughput
//
// A front that dispatches to worker processes (sluice's proxy, for
// Node.js renderers) keeps a Worker per process: how many requests that
// process may hold at once, in [1, Max]. Every window (WorkerWindow,
// 100 ms), with s the mean saturation the worker reported on its
// responses (for Node.js, its event-loop utilization) and L the limit:
//
//	s >= MaxSaturation and peak >= L/2, or a request timed out:  L = max(1, floor(0.9 L))
//	s < MaxSaturation and peak >= L:  L = min(L + max(1, ceil(sqrt(L))), floor(MaxSaturation x occupancy / s))
//
// the AIMD rule bounded by the concurrency that would saturate the loop,
// so that a single-threaded CPU-bound worker stays at 1 and an async one
// grows, doubling after a start until its limit is first cut (TCP's slow
// start); its latency against its no-load latency guards both. A worker
// that reports nothing climbs the curve of its throughput against its
// limit (Little's law: mean requests held over mean latency), keeping a
// probe only when each request it added brought at least half a request's
// worth of throughput. Defaults: Initial 1, Max 1000, MaxSaturation 0.98.
// Its type documentation gives the whole rule.
//
// # Signals
//
// Runtime measures the saturation of a Go process from runtime/metrics: the
// 99th percentile of scheduling latency (runnable goroutines waiting for a
// P) against RuntimeOptions.SchedLatency (1ms), and the busy fraction of the
// usable CPUs (GOMAXPROCS, or a lower cgroup v2 cpu.max / v1 CFS quota),
// whichever is higher. Its type documentation states the limits of those
// metrics. SignalFunc adapts any function, for callers with their own
// signal.
package limit
