// Package poison remembers the request shapes that killed workers and
// refuses them for a while, so that a request which kills its worker (a
// "query of death") costs its own client a 503 instead of costing every
// client the workers it kills.
//
// # Shapes
//
// A request's shape is its method and its path, generalised so that a
// client cannot evade the table by varying an identifier: the path is
// cleaned and lower-cased, the query is ignored, a segment that looks like
// an identifier (it holds a digit, or is longer than 24 bytes) becomes *,
// and past three segments the rest becomes one *: "GET /users/42/avatar"
// and "GET /users/43/avatar" are both "GET /users/*/avatar". A path of more
// than one segment has a second, coarser shape, its first segment and *
// ("GET /users/*"), which catches a route that kills whatever follows it.
// Each shape is judged on its own; a request is refused when either of its
// shapes is.
//
// # The rule
//
// A worker that dies while holding requests cannot say which of them
// killed it. With one request in flight the culprit is certain; with
// several, each is a suspect, and a popular route is a suspect at many
// deaths without being the cause. So:
//
//   - A death counts once for each shape in flight on the dead worker
//     (Died). A shape that was in flight at After deaths within Window,
//     and was served (answered by a worker) fewer times than that since
//     the first of them, is quarantined. The second condition clears the
//     innocent bystander: a shape that keeps being answered is not what
//     kills. (A client can therefore shield a poisonous shape by mixing in
//     good requests of the same shape; the deaths it causes then cost one
//     worker each, and the supervisor keeps restarting them.)
//   - A quarantined shape is refused (the proxy answers 503, Sluice-Shed:
//     poison) for Quarantine, doubled for each quarantine of the same
//     shape before it is forgiven, up to MaxQuarantine.
//   - When the quarantine ends the shape is on probation: one request of
//     it at a time is let through, as Google's search canaried a query on
//     a few leaves before fanning it out to all. If the probe is served,
//     the shape is on parole for Window: any death it is in flight at
//     sends it back into quarantine at once, for twice as long; after a
//     parole without one it is forgotten. If the probe is in flight at a
//     death, or fails once it reached its worker, the shape goes back
//     into quarantine, for twice as long. A shape on probation that
//     nobody asks for during Window is forgotten too.
//
// The table holds at most MaxShapes shapes; a new one replaces the shape
// that matters least (one neither quarantined nor on probation, the
// longest untouched, else the quarantine that ends first), so that memory
// is bounded whatever shapes clients invent.
package poison
