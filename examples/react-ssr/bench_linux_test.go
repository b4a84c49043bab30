package reactssr

import (
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// renderMillis returns the worker's own render time from its Server-Timing
// header ("render;dur=12.34").
func renderMillis(h http.Header) float64 {
	v, ok := strings.CutPrefix(h.Get("Server-Timing"), "render;dur=")
	if !ok {
		return 0
	}
	ms, _ := strconv.ParseFloat(v, 64)
	return ms
}

// benchPages GETs listing pages one after another from get, and reports
// the worker's render time beside the whole round trip: the difference is
// the transport, and through sluice its hop.
func benchPages(b *testing.B, get func(path string) reply) {
	b.ReportAllocs()
	var renderMs float64
	n := 0
	for b.Loop() {
		r := get("/?page=" + strconv.Itoa(n%50+1))
		if msg := checkPage(r); msg != "" {
			b.Fatal(msg)
		}
		renderMs += renderMillis(r.header)
		n++
	}
	b.ReportMetric(renderMs/float64(n), "render-ms/op")
}

// BenchmarkWorker is worker.js alone, over its unix socket.
func BenchmarkWorker(b *testing.B) {
	w := startWorker(b, requireNode(b))
	benchPages(b, w.get)
}

// BenchmarkSluice is the same page through sluice serve (two workers, one
// request at a time).
func BenchmarkSluice(b *testing.B) {
	s := startSluice(b, requireNode(b), newHoldHook(b))
	benchPages(b, func(path string) reply { return get(s.client, s.base+path, 10*time.Second) })
}
