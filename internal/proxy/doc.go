// Package proxy is sluice's front for a pool of worker processes: it reads a
// request completely, waits for admission in the one central queue (an
// admission.Controller), sends the request to an idle worker slot, and
// relays the answer. It replaces the nginx (request and response buffering,
// /ping) and HAProxy (queue, maxconn 1 per worker, leastconn) pair that
// Airbnb put in front of single-threaded Node.js renderers, and avoids the
// ways that pair fails under overload.
//
// # A request's way
//
//  1. The body is read whole before anything else (a slow client never
//     occupies a worker): too large is 413, a body read that hits the
//     server's read deadline is 408, a client that hangs up gets nothing.
//     Its memory grows with the bytes received, never with the length
//     declared, and is reserved from MaxBufferedBytes, a per-process
//     budget: a body that would not fit now is 503.
//  2. Admission: the Controller queues the request (bounded, with a queue
//     timeout, dropping clients that hang up) or sheds it: the shed response
//     or the route's Fallback.
//  3. Dispatch: the idle slot with the fewest requests outstanding, warm
//     workers before cold ones. A worker of Concurrency 1 never has two
//     requests in flight. If the client has gone by now the request is not
//     sent (counted as never dispatched).
//  4. Relay: the response is read from the worker into memory, up to
//     BufferResponseBytes beyond what the client has taken, so the slot is
//     freed when the worker has finished sending, whatever the client's
//     speed. Streams are relayed as they come, with a flush after each read.
//     Response buffers count against MaxBufferedBytes too; a response that
//     would not fit is relayed as a stream. A client that takes nothing is
//     cut by the server's send timeout: the rest of a buffered response is
//     read and discarded, a stream's worker connection closed (streams.go).
//
// # Slots
//
// A slot is taken from dispatch until the worker has finished its response,
// even when the client hung up or was answered 504 at Timeout (a stream,
// which may never finish, is bounded apart: see streams.go): a render
// cannot be cancelled, and giving its slot away early sends the next request
// into a busy worker (HAProxy's maxconn 1 with abortonclose does exactly
// that; its workers' accept queues filled with renders for nobody). Only a
// worker that stays silent for Timeout plus HangGrace is considered hung:
// its connection is closed and the slot freed. With Options.OnHung (as
// sluice wires it to the supervisor) the worker is first taken out of
// rotation for good, so the freed slot is never given to it again, and
// reported, to be killed and replaced.
//
// # Per-worker limits
//
// A worker's slots are its limit: fixed (Endpoint.Concurrency), or, for an
// adaptive endpoint (Endpoint.Adaptive), found at run time in [1,
// Concurrency] and reconsidered every WorkerLimit.Window. A worker that
// reports its saturation on its responses (HeaderSaturation: for Node.js,
// event-loop utilization, as node/sluice-worker sends it) is judged by an
// AIMD rule over it (limit.AIMD's), bounded by the concurrency that would
// saturate it: a single-threaded CPU-bound renderer stays at 1, an async
// one grows until its event loop is saturated. A worker that reports
// nothing is judged by its throughput as its limit moves. The header is read
// and removed before the client sees the response; one that cannot be read
// is counted (EndpointStats.BadReports) and ignored. limit.Worker's doc
// gives the rules.
//
// The Controller's limit follows the slots: the Proxy sets the Controller's
// ceiling (Controller.SetCeiling) to the limits of the routable workers plus
// the requests still running on workers that are draining or gone, and the
// Controller enforces the lower of that and its own algorithm (in sluice, a
// fixed cap on requests in flight). The limit has one owner: every admitted
// request finds an idle slot (if in-flight requests are fewer than the sum
// of the limits, some worker is below its own), and the queue is the
// Controller's, where requests are prioritised and shed, not a hidden one
// here. Only three requests ever wait here for a slot (Stats.SlotWaits): a
// retry whose other workers are busy, one whose workers are all
// quarantined, and one admitted in the instant a worker's limit fell.
//
// # Failures
//
// A request none of which was written to its worker (a refused dial, a
// kept-alive connection found closed first) goes to another idle one,
// with the same admission permit. Once any byte was written it never goes
// to a second worker, whatever its method: a worker that fails before
// answering, reset before any response byte included, may have died of
// this very request, and one poisonous request must not kill two workers.
// It gets 502. One replay is made, to the same worker, as net/http's
// Transport made it: a GET or HEAD (or a request with an Idempotency-Key)
// whose reused keep-alive connection fails before any byte of the
// response is sent again on a fresh connection, which answers it if the
// connection was merely stale; if the worker died, that dial fails and
// the request, counted as sent, is not passed on (upstream.Client).
// Past the request's budget the client gets 504 (or the Fallback), and the
// permit's sample is marked Dropped.
//
// # The connection to a worker
//
// HTTP/1.1 over kept-alive connections, spoken by an upstream.Client per
// worker rather than net/http's Transport: the exchange's goroutine
// writes the request (one write when it fits 32 KiB) and reads the
// response, with no reader and writer goroutines per connection to hand
// off to, and the client counts the bytes that decide whether a request
// reached its worker (upstream.Call). The exchange runs on the handler's
// goroutine (exchange.serve): a response buffered whole costs no
// goroutine hand-off at all. What outlives the handler's wait moves to a
// pooled runner (runner.go) and the handler awaits it there: a worker
// that has not begun to answer when the budget runs out or the client
// leaves (a read deadline, set by the budget or by the client's context,
// ends the wait before any byte of the response is read, so the runner
// reads it whole), a body still coming then, and a streamed response.
// Requests and responses are written and parsed as net/http does. Idle
// connections per worker are kept up to its Concurrency (an adaptive
// worker's ceiling), so a worker at its limit never needs a new one.
//
// Request framing is checked before anything else (see framing.go): CONNECT
// and asterisk-form targets are refused, and the HTTP/1 connection of a
// request with a chunked body is closed after its response. Before the
// request is classified, what a worker could read otherwise than sluice is
// refused too: a method that is not a token, a query with a space, too many
// header fields, and a path with dot or empty segments or an encoded slash
// (see path.go: the path classified is the path forwarded). Header names
// with an underscore are dropped (see dropUnderscore).
//
// # No worker
//
// When no worker is routable (before the first is ready, or while the only
// one restarts), an admitted request is answered 503 "no worker" at once
// rather than held: readiness (see Proxy.Ready) should be false then, and a
// fast refusal lets the client retry elsewhere. The Controller's limit is 1
// in that state, so the queue drains quickly.
package proxy
