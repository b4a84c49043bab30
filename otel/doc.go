// Package sluiceotel traces sluice with OpenTelemetry, in both of its
// faces.
//
// For Go services that use sluice as a library, Wrap: a span for the time a
// request waited for its slot ("sluice.queue") and one for its handler
// ("sluice.handler"), both children of the request's server span
// ("sluice.request"), itself the child of the caller's span when the request
// carries a W3C traceparent.
//
// For the sluice binary, WrapFront: the same server span around the whole
// front, the wait for admission and the call to the worker
// ("sluice.worker") as its children, recorded from what the front noted of
// the request; the worker is sent a traceparent naming sluice's span, so
// that its own spans nest below. The command in cmd/sluice is sluice's with
// WrapFront and an OTLP exporter configured from the standard OTEL_*
// environment variables.
//
// It is a module of its own (github.com/sluicehq/sluice/otel) so that
// sluice's go.mod gains no OpenTelemetry dependency: the core offers
// stdlib-only hooks (admission.Middleware's Observe; the binary's
// per-request record, internal/reqinfo, and cli.Extensions) and this
// package adapts them. Nothing is traced unless a service wraps its handler
// with Wrap, or the traced binary is given a collector to send spans to.
package sluiceotel
