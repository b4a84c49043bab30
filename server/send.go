package server

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// sendWriter gives each write of a response, and the last flush, d to be
// taken by the client (Server.SendTimeout). The deadline is set before a
// write and cleared after it: over HTTP/2 a pending deadline resets the
// stream when it passes, even between writes, and a stream may pause as
// long as it likes.
type sendWriter struct {
	http.ResponseWriter
	dl       writeDeadliner // w's own, or its ResponseController
	d        time.Duration
	hijacked bool
}

// writeDeadliner is what http.ResponseController calls to set a write
// deadline; net/http's own writers (HTTP/1 and HTTP/2) have it.
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

func newSendWriter(w http.ResponseWriter, d time.Duration) *sendWriter {
	sw := &sendWriter{ResponseWriter: w, d: d}
	// net/http's writer is asked directly, as ResponseController would:
	// one allocation less for every response.
	if dl, ok := w.(writeDeadliner); ok {
		sw.dl = dl
	} else {
		sw.dl = http.NewResponseController(w)
	}
	// A deadline left by the connection's previous response must not cut
	// this one.
	_ = sw.dl.SetWriteDeadline(time.Time{})
	return sw
}

func (w *sendWriter) arm()    { _ = w.dl.SetWriteDeadline(time.Now().Add(w.d)) }
func (w *sendWriter) disarm() { _ = w.dl.SetWriteDeadline(time.Time{}) }

func (w *sendWriter) Write(p []byte) (int, error) {
	w.arm()
	n, err := w.ResponseWriter.Write(p)
	w.disarm()
	return n, err
}

// Flush is http.Flusher's, for handlers that assert it.
func (w *sendWriter) Flush() { _ = w.FlushError() }

// FlushError is what http.ResponseController.Flush calls.
func (w *sendWriter) FlushError() error {
	w.arm()
	err := http.NewResponseController(w.ResponseWriter).Flush()
	w.disarm()
	return err
}

// Hijack hands the connection over without a deadline.
func (w *sendWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.disarm()
	c, rw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err == nil {
		w.hijacked = true
	}
	return c, rw, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (w *sendWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// end bounds what net/http still writes after the handler returns (the
// buffered rest of the body, the last chunk).
func (w *sendWriter) end() {
	if !w.hijacked {
		w.arm()
	}
}
