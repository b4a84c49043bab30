package demo

import (
	"io"
	"net/http"
)

// DownstreamCap is the concurrency of LibHandler's simulated downstream:
// a request with ?downstream=1 holds one of DownstreamCap slots for its
// whole render (its ?sleep= standing for the downstream's work), as a
// handler calling a service behind a connection pool would.
const DownstreamCap = 32

// LibHandler returns the routes of the demo app served in-process, as a Go
// service using sluice as a library serves its handler: app at /, behind
// the admission middleware admit (nil: none), and the app's stats
// (StatsPath) and a ready path (ReadyPath), never admitted, so that they
// answer while the app is saturated. ?downstream=1 makes a request wait
// for one of DownstreamCap slots first.
//
// `sluice serve` runs it in library mode with its own middleware; the
// evaluation suite's library-face servers run it with and without one.
func LibHandler(app *App, admit func(http.Handler) http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(StatsPath, app.StatsHandler())
	mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ready\n") })
	var h http.Handler = downstream(app, DownstreamCap)
	if admit != nil {
		h = admit(h)
	}
	mux.Handle("/", h)
	return mux
}

// downstream makes requests with ?downstream=1 hold one of n slots while
// next serves them; a client that gives up while waiting frees its place.
func downstream(next http.Handler, n int) http.Handler {
	sem := make(chan struct{}, n)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("downstream") != "1" {
			next.ServeHTTP(w, r)
			return
		}
		select {
		case sem <- struct{}{}:
		case <-r.Context().Done():
			return
		}
		defer func() { <-sem }()
		next.ServeHTTP(w, r)
	})
}
