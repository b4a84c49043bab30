// Package sluicegrpc brings sluice's overload control to gRPC: server
// interceptors that admit calls through an admission.Controller, and client
// interceptors that bound a caller's retries and stop it from hammering a
// failing or shedding server, with the client package's rules.
//
// It is a module of its own, github.com/sluicehq/sluice/grpc, so that
// google.golang.org/grpc never enters the core module's dependencies.
//
// # Server
//
// ServerInterceptor admits every call (unary, or a whole stream) through one
// Controller, the same one an HTTP Middleware may share: the slot is held
// until the handler returns and given back on panic too (a unary call's
// duration feeds the limit algorithm; a stream's, which may be hours, does
// not). A call the Controller sheds never reaches the handler and ends at
// once, trailers only, with
//
//   - the status code Code(reason): RESOURCE_EXHAUSTED for every reason but
//     ReasonShutdown, which is UNAVAILABLE (this server is going away;
//     another may serve the call);
//   - the trailer grpc-retry-pushback-ms: the Controller's RetryAfter in
//     milliseconds. grpc-go's retry policy waits exactly that long before
//     its next attempt (gRFC A6), instead of its own backoff;
//   - the trailer sluice-shed naming the Reason, as the Sluice-Shed header
//     does over HTTP, so that a client knows the handler never ran and a
//     retry is harmless whatever the method.
//
// A Classifier maps a call to its admission.Request. Its deadline is the
// call's own (the grpc-timeout the caller sent, which grpc-go puts on the
// context), shortened by a matching Rule's Timeout and by the
// sluice-timeout metadata of a trusted peer. Priority (sluice-priority),
// and a tenant taken from metadata whose key begins with "sluice-", are
// believed only from TrustedPeers, as admission.Classifier believes the
// Sluice-* headers: otherwise any caller could raise its own priority or
// borrow another tenant's share. The handler's context carries the
// deadline and the Request (admission.NewContext, read back with
// admission.FromContext or RequestFromContext), so that both the client
// package's Transport and ClientInterceptor forward its priority.
//
// Health checks (grpc.health.v1.Health) bypass admission by default, as
// the server package answers HTTP probes before everything: a probe that
// fails because the server is busy gets a busy server restarted.
//
// # Client
//
// ClientInterceptor runs every call through a client.Transport, so that gRPC
// calls get exactly the HTTP client's bounds: per target (the ClientConn's
// Target), a circuit breaker and adaptive throttling; per interceptor, a
// retry budget; per call, at most MaxAttempts attempts with the server's
// pushback (stretched by up to a tenth) or jittered exponential backoff
// between them. A call is retried only when the server said the handler
// never ran: RESOURCE_EXHAUSTED or UNAVAILABLE with a sluice-shed or a
// non-negative grpc-retry-pushback-ms trailer. Other failures
// (UNAVAILABLE without them, DEADLINE_EXCEEDED) count against the breaker
// and are returned; calls that never left the client are retried by grpc-go
// itself (transparent retry). Application errors (NOT_FOUND, INTERNAL...)
// are answers: they count as successes. A call refused locally fails with
// UNAVAILABLE, and its error wraps client.ErrCircuitOpen or
// client.ErrThrottled for errors.Is.
//
// Streams are admitted by the breaker and the throttle and their end is
// judged like a unary call's, but they are not retried: messages already
// sent or received cannot be replayed by an interceptor.
//
// Retry at one layer only: with these interceptors, leave grpc-go's
// retryPolicy out of the service config (or set MaxAttempts to 1 here).
package sluicegrpc
