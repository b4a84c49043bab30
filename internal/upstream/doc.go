// Package upstream is sluice's HTTP/1.1 client to one upstream, a worker
// process or a static upstream: kept-alive connections, a request written
// whole from its buffered body, the response's header read and its body
// handed to the caller, which gives the connection back by reading it to
// the end.
//
// It is used instead of net/http's Transport, for two reasons the profile
// of a loaded front gave. The Transport runs a
// reader and a writer goroutine per connection, so each request crosses
// three goroutines and wakes the scheduler at every hand-off; here the
// caller's own goroutine writes the request and reads the response (a
// body over SyncWriteMax is written by a goroutine of its own). And it
// knows, byte for byte, whether a request reached its upstream (Call.Sent),
// where the Transport could only be asked through httptrace and a context
// per request: a request none of which was written may go elsewhere, one
// that reached its upstream may have killed it and must not.
//
// Responses are parsed by net/http itself (ReadResponse), so their framing
// is the Transport's: Content-Length, chunked and close-delimited bodies,
// HEAD, 1xx, Connection: close. Requests are written as Request.Write
// writes them (WriteRequest), without its formatting and allocations.
//
// A kept-alive connection is looked at before each reuse (a peek that
// never waits): bytes on it, or read past a response's end, are an
// upstream writing past its framing, and would become the next request's
// response. The connection is closed, Options.Unsolicited told, and that
// upstream's connections are no longer reused (Client.Broken).
//
// A caller that must not wait past a point for the response to begin (a
// handler with a budget, whose client may leave) runs the call inline
// (Call.BeginInline): RoundTrip then returns ErrPending, the request
// written and its connection kept, and another goroutine reads the
// response with Resume.
package upstream
