// Package sluiceotel traces sluice's admission control with OpenTelemetry,
// for Go services that use sluice as a library: a span for the time a
// request waited for its slot ("sluice.queue") and one for its handler
// ("sluice.handler"), both children of the request's server span
// ("sluice.request"), itself the child of the caller's span when the request
// carries a W3C traceparent.
//
// It is a module of its own (github.com/sluicehq/sluice/otel) so that
// sluice's go.mod gains no OpenTelemetry dependency: the core offers a
// stdlib-only hook, admission.Middleware's Observe, and this package adapts
// it. Nothing is traced unless a service wraps its handler with Wrap.
//
// The sluice binary cannot import this module. It propagates a request's
// traceparent and tracestate to the worker untouched, can generate a
// traceparent for a request without one (server.generateTraceparent: its
// trace id is the request's ID), logs the trace id in the access log line,
// and sends X-Request-Start, from which a worker's tracing records the time
// spent in sluice's queue (see docs/observability.md).
package sluiceotel
