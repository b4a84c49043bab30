package compress_test

import (
	stdgzip "compress/gzip"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strconv"
	"testing"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"

	"github.com/sluicehq/sluice/internal/compress"
	"github.com/sluicehq/sluice/internal/testutil"
)

// ssrPage is examples/react-ssr's listing page rendered with 25 cards:
// 80 KB of server-rendered HTML.
func ssrPage(b testing.TB) []byte {
	name := "testdata/page80.html"
	if f := os.Getenv("COMPRESS_BENCH_PAGE"); f != "" {
		name = f // another page, e.g. the 600 KB one (?cards=200)
	}
	p, err := os.ReadFile(name)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// discard is a ResponseWriter that counts what it is given.
type discard struct {
	hdr http.Header
	n   int
}

func (d *discard) Header() http.Header { return d.hdr }
func (d *discard) WriteHeader(int)     {}
func (d *discard) Write(p []byte) (int, error) {
	d.n += len(p)
	return len(p), nil
}

// BenchmarkPage is the whole middleware on the 80 KB page, as a buffered
// proxied response arrives (Content-Length set, one write): the CPU a
// response costs, its allocations, and the ratio achieved.
func BenchmarkPage(b *testing.B) {
	page := ssrPage(b)
	cl := strconv.Itoa(len(page))
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", cl)
		_, _ = w.Write(page)
	})
	for _, tt := range []struct {
		ae    string
		level int
	}{
		{"identity", 0},
		{"gzip", 1}, {"gzip", 4}, {"gzip", 5}, {"gzip", 6}, {"gzip", 9},
		{"br", 1}, {"br", 2}, {"br", 3}, {"br", 4}, {"br", 5}, {"br", 6},
	} {
		b.Run(fmt.Sprintf("%s-%d", tt.ae, tt.level), func(b *testing.B) {
			o := compress.Options{GzipLevel: tt.level, BrotliLevel: tt.level}
			if tt.ae == "identity" {
				o = compress.Options{}
			}
			c := mustNew(b, o)
			wrapped := c.Wrap(h)
			benchServe(b, wrapped, tt.ae, &discard{hdr: http.Header{}}, len(page))
		})
	}
}

// BenchmarkGzip compares the gzip implementations bare, at the same
// levels, on the same page: the standard library's with a new writer per
// response (the naive reference) and reused, and klauspost/compress's
// reused, which the Compressor uses.
func BenchmarkGzip(b *testing.B) {
	page := ssrPage(b)
	type gz interface {
		Write([]byte) (int, error)
		Close() error
		Reset(io.Writer)
	}
	impls := []struct {
		name string
		new  func(w io.Writer, level int) gz
	}{
		{"std", func(w io.Writer, l int) gz { z, _ := stdgzip.NewWriterLevel(w, l); return z }},
		{"klauspost", func(w io.Writer, l int) gz { z, _ := gzip.NewWriterLevel(w, l); return z }},
	}
	for _, level := range []int{1, 5, 6} {
		b.Run(fmt.Sprintf("std-new-%d", level), func(b *testing.B) {
			w := &discard{}
			b.SetBytes(int64(len(page)))
			b.ReportAllocs()
			start := testutil.ProcessCPU()
			for b.Loop() {
				w.n = 0
				zw, _ := stdgzip.NewWriterLevel(w, level)
				_, _ = zw.Write(page)
				_ = zw.Close()
			}
			testutil.ReportCPU(b, start)
			b.ReportMetric(float64(w.n), "out-bytes")
		})
		for _, impl := range impls {
			b.Run(fmt.Sprintf("%s-reset-%d", impl.name, level), func(b *testing.B) {
				w := &discard{}
				zw := impl.new(w, level)
				b.SetBytes(int64(len(page)))
				b.ReportAllocs()
				start := testutil.ProcessCPU()
				for b.Loop() {
					w.n = 0
					zw.Reset(w)
					_, _ = zw.Write(page)
					_ = zw.Close()
				}
				testutil.ReportCPU(b, start)
				b.ReportMetric(float64(w.n), "out-bytes")
			})
		}
	}
}

// BenchmarkStream is a streamed render: the page in 4 KiB writes, each
// flushed, as the proxy relays a response larger than its buffer.
func BenchmarkStream(b *testing.B) {
	page := ssrPage(b)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		f := w.(http.Flusher)
		for p := page; len(p) > 0; {
			n := min(4096, len(p))
			_, _ = w.Write(p[:n])
			f.Flush()
			p = p[n:]
		}
	})
	for _, ae := range []string{"gzip", "br"} {
		b.Run(ae, func(b *testing.B) {
			wrapped := mustNew(b, compress.Options{}).Wrap(h)
			d := &flushDiscard{discard{hdr: http.Header{}}}
			benchServe(b, wrapped, ae, d, len(page))
		})
	}
}

type flushDiscard struct{ discard }

// responseSink is a discard, with Flush or without.
type responseSink interface {
	http.ResponseWriter
	sink() *discard
}

func (d *discard) sink() *discard { return d }

// benchServe serves a page of size bytes through wrapped, asking for
// encoding ae, into w, and reports CPU, allocations and the bytes written
// per request.
func benchServe(b *testing.B, wrapped http.Handler, ae string, w responseSink, size int) {
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept-Encoding", ae)
	d := w.sink()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	start := testutil.ProcessCPU()
	for b.Loop() {
		clear(d.hdr)
		d.n = 0
		wrapped.ServeHTTP(w, r)
	}
	testutil.ReportCPU(b, start)
	b.ReportMetric(float64(d.n), "out-bytes")
}

func (*flushDiscard) Flush() {}

// BenchmarkSmallPassThrough is the per-request cost before any compression: a
// browser's Accept-Encoding and a small response passed through.
func BenchmarkSmallPassThrough(b *testing.B) {
	body := []byte(`{"ok":true}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	wrapped := mustNew(b, compress.Options{}).Wrap(h)
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept-Encoding", "gzip, deflate, br, zstd")
	w := &discard{hdr: http.Header{}}
	b.ReportAllocs()
	for b.Loop() {
		clear(w.hdr)
		wrapped.ServeHTTP(w, r)
	}
}

// BenchmarkEncoderHeap reports the memory one encoder holds after
// compressing the page (what a pooled encoder keeps, and what each
// response being compressed at the same moment costs). Run it with a
// small -benchtime: every op collects garbage twice.
func BenchmarkEncoderHeap(b *testing.B) {
	page := ssrPage(b)
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for _, tt := range []struct {
		name string
		new  func() io.WriteCloser
	}{
		{"gzip-5", func() io.WriteCloser { z, _ := gzip.NewWriterLevel(io.Discard, 5); return z }},
		{"br-2-window-20", func() io.WriteCloser {
			return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: 2, LGWin: 20})
		}},
		{"br-2-window-22", func() io.WriteCloser {
			return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: 2, LGWin: 22})
		}},
		{"br-4-window-20", func() io.WriteCloser {
			return brotli.NewWriterOptions(io.Discard, brotli.WriterOptions{Quality: 4, LGWin: 20})
		}},
	} {
		b.Run(tt.name, func(b *testing.B) {
			var total uint64
			for b.Loop() {
				before := heap()
				w := tt.new()
				_, _ = w.Write(page)
				_ = w.Close()
				total += heap() - before
				runtime.KeepAlive(w)
			}
			b.ReportMetric(float64(total)/float64(b.N)/1024, "heap-KiB")
		})
	}
}
