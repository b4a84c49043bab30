// Package compress compresses HTTP responses, gzip and brotli, as a
// middleware: what nginx's gzip module did in front of server-side
// renderers, for sluice's front.
//
// # What is compressed
//
// The encoding is negotiated from Accept-Encoding (RFC 9110 12.5.3):
// q-values, "*", "identity", q=0. A response is compressed when its
// Content-Type is one of Options.Types, it is at least Options.MinLength
// bytes (declared by Content-Length, or learned by holding the first
// bytes), and nothing says otherwise: never a response already encoded,
// a range (206, Content-Range), a 1xx, 204 or 304, one marked
// Cache-Control: no-transform, the response to a HEAD request (whose
// headers then describe the uncompressed representation, as nginx's do),
// or a switch of protocols. A compressed response loses Content-Length
// and Accept-Ranges, its ETag is made weak, and it gets Vary:
// Accept-Encoding, as does the same response sent uncompressed to a
// client that takes no encoding.
//
// Flushes pass through (a sync flush of the encoder): what a streaming
// handler flushes reaches the client. A handler that panics mid-response
// leaves its stream unfinished, so truncation is never mistaken for the
// end.
//
// # Cost
//
// Encoders, buffers and writers come from pools. The encoder writes into
// memory and goes back to its pool before the last bytes are written to
// the client, so a slow client holds its compressed bytes, not an
// encoder's megabytes. docs/benchmarks.md ("Compression") has the CPU per
// response at each level, beside nginx's gzip.
//
// # Where sluice puts it
//
// sluice serve wraps the Compressor around the proxy (internal/proxy),
// not inside it. The proxy reads a response of up to its
// BufferResponseBytes from the worker into memory and frees the worker's
// slot and admission permit when the worker has finished, before it writes
// the first byte to the client; the compression happens in those writes,
// so it never holds a render slot. TestCompressionOutsideTheSlot shows it:
// a client stuck on its first compressed byte holds no slot, and the one
// single-slot worker serves the next request meanwhile.
package compress
