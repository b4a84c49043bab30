package server

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// discardWriter is a ResponseWriter that keeps nothing, so that the
// benchmarks measure the front handler and not a recorder. It takes
// write deadlines, as net/http's writers do.
type discardWriter struct{ h http.Header }

func (w *discardWriter) SetWriteDeadline(time.Time) error { return nil }

func (w *discardWriter) Header() http.Header         { return w.h }
func (w *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *discardWriter) WriteHeader(int)             {}

// What the front handler costs a request on its way to Handler, against
// calling Handler directly, and what answering a probe costs.
func BenchmarkFront(b *testing.B) {
	app := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	s := &Server{Handler: app}
	front := s.front(s.config(), &runState{})
	for _, bc := range []struct {
		name string
		h    http.Handler
		path string
	}{
		{"direct", app, "/app"},
		{"front", front, "/app"},
		{"health", front, DefaultHealthPath},
		{"ready", front, DefaultReadyPath},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", bc.path, nil)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				clear(w.h)
				bc.h.ServeHTTP(w, r)
			}
		})
	}
}
