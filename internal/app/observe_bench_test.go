package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/sluicehq/sluice/admission"
)

type benchKey int

// BenchmarkObserve is the request-info middleware's cost per request, with
// a context as deep as net/http's (server, local address, connection).
func BenchmarkObserve(b *testing.B) {
	l := &live{}
	l.cls.Store(&admission.Classifier{})
	h := l.observe(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}), observing{})
	r := httptest.NewRequest("GET", "/", nil)
	ctx := r.Context()
	for i := range 4 {
		ctx = context.WithValue(ctx, benchKey(i), i)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	r = r.WithContext(ctx)
	w := httptest.NewRecorder()
	b.ReportAllocs()
	for b.Loop() {
		h.ServeHTTP(w, r)
	}
}
