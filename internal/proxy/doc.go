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
//  1. The ping path is answered at once, never queued.
//  2. The body is read whole before anything else (a slow client never
//     occupies a worker): too large is 413, a body read that hits the
//     server's read deadline is 408, a client that hangs up gets nothing.
//  3. Admission: the Controller queues the request (bounded, with a queue
//     timeout, dropping clients that hang up) or sheds it: the shed response
//     or the route's Fallback.
//  4. Dispatch: the idle slot with the fewest requests outstanding, warm
//     workers before cold ones. A worker of Concurrency 1 never has two
//     requests in flight. If the client has gone by now the request is not
//     sent (counted as never dispatched).
//  5. Relay: the response is read from the worker into memory, up to
//     BufferResponseBytes beyond what the client has taken, so the slot is
//     freed when the worker has finished sending, whatever the client's
//     speed. Streams are relayed as they come, with a flush after each read.
//
// # Slots
//
// A slot is taken from dispatch until the worker has finished its response,
// even when the client hung up or was answered 504 at Timeout: a render
// cannot be cancelled, and giving its slot away early sends the next request
// into a busy worker (HAProxy's maxconn 1 with abortonclose does exactly
// that; its workers' accept queues filled with renders for nobody). Only a
// worker that stays silent for Timeout plus HangGrace is considered hung:
// its connection is closed and the slot freed.
//
// The Controller's limit follows the slots: Add, Drain and Remove set it to
// the slots of routable workers plus the requests still running on workers
// that are draining or gone, so that every admitted request finds an idle
// slot and the queue is the Controller's, not a hidden one here. When a
// limit algorithm raises the limit above that anyway, the excess waits here
// for a slot (FIFO, counted in Stats.SlotWaits) rather than overload a
// worker.
//
// # Failures
//
// A worker that cannot be reached (a dial error: nothing was sent) is
// replaced by another idle one, with the same admission permit. A worker
// that fails mid-request gives 502; GET and HEAD are retried once on
// another idle worker first. Past the request's budget the client gets 504
// (or the Fallback), and the permit's sample is marked Dropped.
//
// # No worker
//
// When no worker is routable (before the first is ready, or while the only
// one restarts), an admitted request is answered 503 "no worker" at once
// rather than held: readiness (see Proxy.Ready) should be false then, and a
// fast refusal lets the client retry elsewhere. The Controller's limit is 1
// in that state, so the queue drains quickly.
package proxy
