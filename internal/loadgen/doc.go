// Package loadgen offers HTTP load open-loop and reports what came back:
// goodput, latency of successes and errors by kind, per phase and over
// time. It is the measuring instrument behind `sluice bench`, `sluice demo`
// and the evaluation scripts, and exists to test one claim: when offered
// load exceeds capacity, goodput stays up and latency stays bounded.
//
// # Open loop
//
// Real users do not wait for each other. Run launches each logical request
// at its scheduled time (constant rates and linear ramps, phase after
// phase) in its own goroutine and never waits for earlier responses, so a
// server that stalls is still offered the planned load. Latency counts
// from the scheduled send time, not from the moment a goroutine got round
// to sending, so neither the server nor the generator can hide queueing
// (the "coordinated omission" of closed-loop tools). Goroutines are
// bounded by Config.MaxOutstanding; a send due while the bound is hit is
// counted as generator-dropped rather than delayed. A report with drops
// says the generator, not only the server, ran out of room.
//
// # Clients
//
// Each attempt has the caller's patience, Config.Timeout; an answer after
// it is a timeout, never a success. A logical request succeeds when some
// attempt gets a 2xx or 3xx. Retries (immediate, exponential backoff with
// full jitter, or honouring Retry-After) are extra offered load and are
// counted as attempts, so a report shows how much a retry policy amplifies
// an overload. Mixes of header values (tenants, priorities) and of query
// strings (request cost) are drawn per logical request from a seeded PRNG.
//
// # Reports
//
// A Report holds per-phase and total Stats, per-class Stats for each mix
// value, and a time series for charts; every figure is attributed to its
// request's scheduled send time. Shed responses are counted by the reason
// in their Sluice-Shed header ("503:queue-full", "503:codel", ...). It
// renders as a text table (WriteTable), JSON (WriteJSON) and an SVG chart
// (WriteSVG).
//
// Only point it at servers you run: it is built to overload them.
package loadgen
