package proxy

import (
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"sync/atomic"
)

var (
	errTooLarge = errors.New("proxy: request body too large")
	errNoMemory = errors.New("proxy: buffered bodies at their memory budget")
)

// Request body chunks grow with the bytes received, never with the length
// declared: the first holds at most minChunk, each next one as much as
// has arrived so far, up to maxChunk. A body of n bytes so holds about n
// bytes, whatever Content-Length promised.
const (
	minChunk = 4 << 10
	maxChunk = 64 << 10
)

// body is a request body read whole, as chunks. Its memory is reserved in
// the Proxy's budget until the last holder lets go: the handler, and each
// exchange that sends it. Chunks are never written once read.
type body struct {
	chunks [][]byte
	n      int64
	held   int64 // bytes reserved in mem
	mem    *budget
	refs   atomic.Int32
}

// reader returns a new reader of the whole body.
func (b *body) reader() io.ReadCloser {
	bufs := net.Buffers(slices.Clone(b.chunks))
	return io.NopCloser(&bufs)
}

func (b *body) retain() { b.refs.Add(1) }

// release lets go of one reference; the last gives the memory back.
func (b *body) release() {
	if b != nil && b.refs.Add(-1) == 0 {
		b.mem.release(b.held)
		b.chunks = nil
	}
}

// bodyLimit is the largest body that could ever be buffered.
func (p *Proxy) bodyLimit() int64 {
	if p.o.MaxBodyBytes > 0 {
		return min(p.o.MaxBodyBytes, p.mem.max)
	}
	return p.mem.max
}

// readBody reads r's body whole, before a slot is taken, into memory
// reserved as the bytes arrive. A body that could never fit (over
// MaxBodyBytes or the whole budget) is errTooLarge; one that would not fit
// now is errNoMemory. The caller releases the body it gets (nil for none).
func (p *Proxy) readBody(w http.ResponseWriter, r *http.Request) (*body, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	limit := p.bodyLimit()
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	rd := http.MaxBytesReader(w, r.Body, limit)
	b := &body{mem: &p.mem}
	b.refs.Store(1)
	var cur []byte
	for {
		if len(cur) == cap(cur) {
			size := min(max(b.n, minChunk), maxChunk)
			if r.ContentLength >= 0 {
				// net/http reports EOF with the last declared byte, so no
				// byte beyond the declared length is needed.
				size = min(size, max(r.ContentLength-b.n, 1))
			}
			if !p.mem.reserve(size) {
				b.release()
				return nil, errNoMemory
			}
			b.held += size
			if len(cur) > 0 {
				b.chunks = append(b.chunks, cur)
			}
			cur = make([]byte, 0, size)
		}
		n, err := rd.Read(cur[len(cur):cap(cur)])
		cur = cur[:len(cur)+n]
		b.n += int64(n)
		if err == io.EOF {
			if len(cur) > 0 {
				b.chunks = append(b.chunks, cur)
			}
			return b, nil
		}
		if err != nil {
			b.release()
			return nil, err
		}
	}
}
