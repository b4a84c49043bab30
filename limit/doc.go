// Package limit holds concurrency-limit algorithms: pure functions of the
// samples and the time they are given.
//
// An Algorithm answers one question: how many requests may be in flight at
// once right now. The admission Controller enforces the answer; the
// algorithm never sees a request, only two kinds of observation:
//
//   - a Sample for each request that completed (its RTT, whether it was
//     dropped for overload, how many were in flight), via Observe;
//   - a Window once every sample window (the process's saturation and the
//     in-flight count), via Tick.
//
// Both return the new limit. Time is always a parameter (Sample.Now,
// Window.Now); nothing here reads the clock, sleeps or starts a goroutine,
// so every rule is tested with plain tables.
package limit
