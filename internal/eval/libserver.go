package eval

import (
	"cmp"
	"context"
	"fmt"
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
	var admit func(http.Handler) http.Handler
	if ctrl != nil {
		admit = ctrl.Wrap
	}
	srv := &http.Server{Handler: demo.LibHandler(app, admit), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 65 * time.Second}
	return demo.ServeUntil(ctx, srv, ln, 10*time.Second)
}
