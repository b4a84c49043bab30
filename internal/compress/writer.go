package compress

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// responseWriter compresses one response on its way to rw. It decides once,
// when the final status is known and, if the length is not declared, when
// MinLength bytes were written, the handler flushed, or the handler
// returned. Until then it holds the status and the bytes written. Like any
// ResponseWriter it is not safe for concurrent use.
type responseWriter struct {
	rw     http.ResponseWriter
	c      *Compressor
	coding coding // negotiated; identity when the client takes none
	head   bool   // a HEAD request: never compressed, its headers describe the uncompressed representation
	state  wstate
	status int           // the final status, once written
	buf    *[]byte       // held body while holding; from c.bufs
	enc    encoder       // while compressing; from c's pools
	out    *bytes.Buffer // compressed bytes not yet written to rw; from c.outs
}

// drainAt is how many compressed bytes are collected before they are
// written to the client. The encoder writes into memory, not to the
// client, so that it is not held while a slow client takes the bytes: a
// page whose compressed form is shorter (80 KB of HTML is 6 to 8 KB) gives
// its encoder back before its first byte is written. An encoder holds 1 MiB
// (gzip) to 3 MiB (brotli); 32 KiB of bytes waiting is far less.
const drainAt = 32 << 10

type wstate uint8

const (
	fresh       wstate = iota // no final status yet
	holding                   // status and body held: the length decides
	plain                     // headers sent; the body passes as it is
	compressing               // headers sent; the body goes through enc
	hijacked                  // the connection is the handler's
)

// verdict is what a response's status and headers say about compressing it.
type verdict uint8

const (
	never verdict = iota // not compressible: sent untouched
	yes                  // compressible, of known length >= MinLength
	maybe                // compressible if it reaches MinLength
)

func (c *Compressor) verdict(h http.Header, status int) verdict {
	switch {
	case status < 200, status == http.StatusNoContent, status == http.StatusPartialContent,
		status == http.StatusNotModified:
		return never
	case len(h["Content-Encoding"]) > 0, len(h["Content-Range"]) > 0,
		hasToken(h["Cache-Control"], "no-transform"):
		return never
	case !matchType(c.types, h.Get("Content-Type")):
		return never
	}
	cl, ok := h["Content-Length"]
	if !ok || len(cl) != 1 {
		return maybe
	}
	n, err := strconv.ParseInt(strings.TrimSpace(cl[0]), 10, 64)
	switch {
	case err != nil:
		return maybe // not ours to judge; net/http will
	case n < int64(max(c.minLength, 1)):
		return never
	}
	return yes
}

func (w *responseWriter) Header() http.Header { return w.rw.Header() }

// Unwrap gives http.ResponseController the connection's own writer, for
// deadlines and full duplex.
func (w *responseWriter) Unwrap() http.ResponseWriter { return w.rw }

func (w *responseWriter) WriteHeader(code int) {
	switch {
	case w.state == plain || w.state == compressing:
		w.rw.WriteHeader(code) // superfluous: net/http says so
		return
	case w.state != fresh:
		return
	case code >= 100 && code < 200 && code != http.StatusSwitchingProtocols:
		w.rw.WriteHeader(code) // informational: the final status follows
		return
	}
	w.status = code
	switch w.c.verdict(w.rw.Header(), code) {
	case never:
		w.send(false, false)
	case yes:
		w.send(true, w.coding != identity && !w.head)
	default:
		w.state = holding
	}
}

// send writes the held status: with Vary: Accept-Encoding when the response
// is one that varies, compressed when compress.
func (w *responseWriter) send(varies, compress bool) {
	h := w.rw.Header()
	if varies {
		addVary(h)
	}
	if compress {
		h.Set("Content-Encoding", w.coding.String())
		delete(h, "Content-Length")
		// The compressed bytes are not the ones Range requests and strong
		// validators speak of: a weak ETag still serves If-None-Match, and
		// If-Range (strong comparison) then sends the whole response.
		delete(h, "Accept-Ranges")
		if et := h.Get("Etag"); et != "" && !strings.HasPrefix(et, "W/") {
			h.Set("Etag", "W/"+et)
		}
		w.out = w.c.getOut()
		w.enc = w.c.getEncoder(w.coding, w.out)
		w.state = compressing
	} else {
		w.state = plain
	}
	w.rw.WriteHeader(w.status)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	switch w.state {
	case fresh:
		w.WriteHeader(http.StatusOK)
		return w.Write(p)
	case holding:
		if w.buf == nil {
			w.buf = w.c.getBuf()
		}
		if len(*w.buf)+len(p) < max(w.c.minLength, 1) {
			*w.buf = append(*w.buf, p...)
			return len(p), nil
		}
		if err := w.release(); err != nil {
			return 0, err
		}
		return w.Write(p)
	case compressing:
		return w.compress(p)
	}
	return w.rw.Write(p)
}

// compress writes p through the encoder, and what it has produced to the
// client once there is drainAt of it.
func (w *responseWriter) compress(p []byte) (int, error) {
	n, err := w.enc.Write(p)
	if err == nil && w.out.Len() >= drainAt {
		err = w.drain()
	}
	return n, err
}

// drain writes the compressed bytes collected to the client.
func (w *responseWriter) drain() error {
	if w.out.Len() == 0 {
		return nil
	}
	_, err := w.rw.Write(w.out.Bytes())
	w.out.Reset()
	return err
}

// release decides a held response that has reached MinLength (or was
// flushed, so is a stream, whose length cannot be waited for): it is
// compressed, and the bytes held go out.
func (w *responseWriter) release() error {
	w.send(true, w.coding != identity && !w.head)
	return w.writeHeld()
}

func (w *responseWriter) writeHeld() error {
	if w.buf == nil || len(*w.buf) == 0 {
		return nil
	}
	var err error
	if w.state == compressing {
		_, err = w.compress(*w.buf)
	} else {
		_, err = w.rw.Write(*w.buf)
	}
	*w.buf = (*w.buf)[:0]
	return err
}

// FlushError sends what was written so far, compressed bytes included (a
// sync flush of the encoder): a stream's flushes reach the client.
func (w *responseWriter) FlushError() error {
	if w.state == fresh {
		w.WriteHeader(http.StatusOK)
	}
	switch w.state {
	case holding:
		if err := w.release(); err != nil {
			return err
		}
	case hijacked:
		return http.ErrHijacked
	}
	if w.state == compressing {
		if err := w.enc.Flush(); err != nil {
			return err
		}
		if err := w.drain(); err != nil {
			return err
		}
	}
	switch f := w.rw.(type) {
	case interface{ FlushError() error }:
		return f.FlushError()
	case http.Flusher:
		f.Flush()
		return nil
	}
	return http.NewResponseController(w.rw).Flush()
}

// Flush is FlushError for handlers that assert http.Flusher.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// Hijack is for handlers that assert http.Hijacker.
func (w *responseWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.rw).Hijack()
	if err == nil {
		w.state = hijacked
	}
	return conn, brw, err
}

// finish completes the response once the handler has returned: a held
// body is shorter than MinLength and goes out as it is (the same for every
// client, so without Vary); a compressed one gets its trailer, and its
// encoder goes back to the pool before the last bytes are written.
func (w *responseWriter) finish() {
	switch w.state {
	case holding:
		w.send(false, false)
		_ = w.writeHeld()
	case compressing:
		_ = w.enc.Close() // cannot fail: it writes to memory
		w.c.putEncoder(w.coding, w.enc)
		w.enc = nil
		_ = w.drain() // an error is a client gone: nobody to tell
	}
}

// addVary adds Accept-Encoding to h's Vary unless it is there, or Vary is *.
func addVary(h http.Header) {
	for _, v := range h["Vary"] {
		for tok := range strings.SplitSeq(v, ",") {
			tok = strings.TrimSpace(tok)
			if tok == "*" || strings.EqualFold(tok, "Accept-Encoding") {
				return
			}
		}
	}
	h.Add("Vary", "Accept-Encoding")
}

// hasToken reports whether a comma-separated header holds token.
func hasToken(values []string, token string) bool {
	for _, v := range values {
		for tok := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(strings.TrimSpace(tok), token) {
				return true
			}
		}
	}
	return false
}
