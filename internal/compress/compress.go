package compress

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
)

// A Compressor compresses the responses of the handlers it wraps. Make one
// with New; it is safe for concurrent use, and keeps its encoders and
// buffers in pools, so a response costs its compression and little else.
type Compressor struct {
	minLength int
	types     []typePattern
	offered   []coding
	gzipLevel int
	brLevel   int

	gzips   sync.Pool // *gzip.Writer
	brotlis sync.Pool // *brotli.Writer
	bufs    sync.Pool // *[]byte of capacity minLength: a body held until its length is known
	outs    sync.Pool // *bytes.Buffer: compressed bytes on their way to the client
	writers sync.Pool // *responseWriter

	encoding atomic.Int64 // encoders taken from the pools and not given back
}

// New returns a Compressor for o, or o's Validate error.
func New(o Options) (*Compressor, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o = o.withDefaults()
	c := &Compressor{
		minLength: int(min(o.MinLength, 1<<30)),
		types:     compileTypes(o.Types),
		gzipLevel: o.GzipLevel,
		brLevel:   o.BrotliLevel,
	}
	for _, e := range o.Encodings {
		c.offered = append(c.offered, codingOf(e))
	}
	return c, nil
}

// Wrap returns h with its responses compressed. Requests to switch
// protocols (Upgrade, CONNECT) reach h untouched: what follows is not an
// HTTP response body.
//
// A handler that panics (http.ErrAbortHandler included) leaves its
// compressed stream unfinished, so a response cut short can never pass for
// a complete one: the client's decoder reports the truncation.
func (c *Compressor) Wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect || len(r.Header["Upgrade"]) > 0 {
			h.ServeHTTP(w, r)
			return
		}
		cw := c.writer(w, r)
		finished := false
		defer func() {
			if !finished {
				c.release(cw) // panicking: the stream stays unfinished
			}
		}()
		h.ServeHTTP(cw, r)
		cw.finish()
		finished = true
		c.release(cw)
	})
}

func (c *Compressor) writer(w http.ResponseWriter, r *http.Request) *responseWriter {
	cw, _ := c.writers.Get().(*responseWriter)
	if cw == nil {
		cw = new(responseWriter)
	}
	ae := r.Header["Accept-Encoding"]
	var to coding
	switch len(ae) {
	case 0:
	case 1:
		to = negotiate(ae[0], c.offered)
	default:
		to = negotiate(strings.Join(ae, ","), c.offered)
	}
	*cw = responseWriter{rw: w, c: c, coding: to, head: r.Method == http.MethodHead}
	return cw
}

// release returns cw's encoder, buffer and cw itself to their pools.
func (c *Compressor) release(cw *responseWriter) {
	if cw.enc != nil {
		c.putEncoder(cw.coding, cw.enc)
	}
	if cw.out != nil && cw.out.Cap() <= maxPooledOut {
		cw.out.Reset()
		c.outs.Put(cw.out)
	}
	if cw.buf != nil {
		*cw.buf = (*cw.buf)[:0]
		c.bufs.Put(cw.buf)
	}
	*cw = responseWriter{}
	c.writers.Put(cw)
}

// encoder is what gzip.Writer and brotli.Writer have in common.
type encoder interface {
	io.WriteCloser
	Flush() error
	Reset(dst io.Writer)
}

var (
	_ encoder = (*gzip.Writer)(nil)
	_ encoder = (*brotli.Writer)(nil)
)

// getEncoder returns an encoder of coding k writing to dst. A pooled one
// may have been left mid-stream by a handler that panicked: Reset starts
// it afresh either way.
func (c *Compressor) getEncoder(k coding, dst io.Writer) encoder {
	c.encoding.Add(1)
	switch k {
	case codingGzip:
		if e, ok := c.gzips.Get().(*gzip.Writer); ok {
			e.Reset(dst)
			return e
		}
		e, err := gzip.NewWriterLevel(dst, c.gzipLevel)
		if err != nil {
			panic(err) // the level was validated
		}
		return e
	default:
		if e, ok := c.brotlis.Get().(*brotli.Writer); ok {
			e.Reset(dst)
			return e
		}
		return brotli.NewWriterOptions(dst, brotli.WriterOptions{Quality: c.brLevel, LGWin: brotliWindow})
	}
}

// brotliWindow is brotli's window, 2^20 bytes: larger than the pages
// compressed here (80-600 KB), so nothing is lost to it, and a quarter of
// brotli's default (2^22): an encoder at quality 2 then holds 2.7-3.2 MiB,
// not 8.9-9.4 MiB (BenchmarkEncoderHeap).
const brotliWindow = 20

func (c *Compressor) putEncoder(k coding, e encoder) {
	c.encoding.Add(-1)
	switch k {
	case codingGzip:
		c.gzips.Put(e)
	default:
		c.brotlis.Put(e)
	}
}

// maxPooledOut bounds the output buffers kept for reuse: one grown by an
// encoder's burst past drainAt is let go rather than kept for good.
const maxPooledOut = 256 << 10

func (c *Compressor) getOut() *bytes.Buffer {
	if b, ok := c.outs.Get().(*bytes.Buffer); ok {
		return b
	}
	return new(bytes.Buffer)
}

func (c *Compressor) getBuf() *[]byte {
	if b, ok := c.bufs.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, 0, c.minLength)
	return &b
}
