package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/app"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/limit"
)

// LibProcs is GOMAXPROCS of the library-face servers: the machine's two
// cores, as a Go service on this machine would have.
const LibProcs = 2

// LibConfig returns the configuration of the library-face server behind
// admission: sluice's built-in defaults (config.Default), not values tuned
// for this suite, with at most two changes, validated as a file's would
// be: server.backpressure.algorithm ("" keeps the default, aimd) and
// server.backpressure.initialLimit (0 keeps the default).
func LibConfig(algorithm string, initialLimit int) (*config.Config, error) {
	if algorithm == "" && initialLimit == 0 {
		return config.Default(), nil
	}
	algorithm = cmp.Or(algorithm, config.Default().Server.Backpressure.Algorithm)
	return config.Parse("-algorithm", fmt.Appendf(nil, "server: {backpressure: {algorithm: %q, initialLimit: %d}}", algorithm, initialLimit))
}

// LibAdmissionOptions returns the admission options the library-face
// server uses: LibConfig(algorithm, initialLimit) mapped as `sluice serve` maps it in
// library mode (app.ControllerOptions), over the process's saturation
// signal sig. With the default algorithm the AIMD limit starts wide open
// at the ceiling maxConcurrentRequests and backs off while sig is at or
// above saturationMax; with gradient it starts at 100 and follows latency.
// Up to queueSize requests wait up to queueTimeout, with CoDel dropping
// from a standing queue.
func LibAdmissionOptions(algorithm string, initialLimit int, sig limit.Signal, log *slog.Logger) (admission.Options, error) {
	cfg, err := LibConfig(algorithm, initialLimit)
	if err != nil {
		return admission.Options{}, err
	}
	return app.ControllerOptions(cfg, sig, log)
}

// DownstreamCap is the concurrency of the library-face server's simulated
// downstream: a request with ?downstream=1 holds one of DownstreamCap
// slots for its whole render (its ?sleep= standing for the downstream's
// work), as a handler calling a service behind a connection pool would.
const DownstreamCap = 32

// LibHandler returns the library-face server's routes: the demo app at /
// (behind ctrl's admission middleware when ctrl is not nil, as
// `c.Wrap(app)`), and the app's stats and a ready path, never queued.
// ?downstream=1 makes a request wait for one of DownstreamCap slots first.
func LibHandler(app *demo.App, ctrl *admission.Controller) http.Handler {
	var admit func(http.Handler) http.Handler
	if ctrl != nil {
		admit = ctrl.Wrap
	}
	return LibHandlerWith(app, admit)
}

// LibHandlerWith is LibHandler with the admission middleware given as
// admit (nil: none): `sluice serve` in library mode passes its own, which
// classifies by the configured routes and notes the queue wait.
func LibHandlerWith(app *demo.App, admit func(http.Handler) http.Handler) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(demo.StatsPath, app.StatsHandler())
	mux.HandleFunc(demo.ReadyPath, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ready\n") })
	var h http.Handler = downstream(app, DownstreamCap)
	if admit != nil {
		h = admit(h)
	}
	mux.Handle("/", h)
	return mux
}

// ServeLib runs a library-face server on ln until ctx is done: the demo app
// in-process with work calibrated at unitsPerMs, plain or (withAdmission)
// behind sluice's admission middleware configured by
// LibAdmissionOptions(algorithm, initialLimit) with the process's runtime saturation
// signal. The caller sets GOMAXPROCS.
func ServeLib(ctx context.Context, ln net.Listener, unitsPerMs float64, withAdmission bool, algorithm string, initialLimit int, log *slog.Logger) error {
	app := &demo.App{Work: demo.NewWork(unitsPerMs), Name: "library face"}
	var ctrl *admission.Controller
	var wg sync.WaitGroup
	bg, stop := context.WithCancel(context.Background())
	defer func() {
		stop()
		wg.Wait()
	}()
	if withAdmission {
		rt, err := limit.NewRuntime(limit.RuntimeOptions{Logger: log})
		if err != nil {
			return err
		}
		// The same sampling period as `sluice serve` in library mode.
		wg.Go(func() { rt.Run(bg, 100*time.Millisecond) })
		o, err := LibAdmissionOptions(algorithm, initialLimit, rt, log)
		if err != nil {
			return err
		}
		if ctrl, err = admission.New(o); err != nil {
			return err
		}
		defer ctrl.Close()
	}
	srv := &http.Server{Handler: LibHandler(app, ctrl), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 65 * time.Second}
	return demo.ServeUntil(ctx, srv, ln, 10*time.Second)
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
