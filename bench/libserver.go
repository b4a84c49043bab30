package bench

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/limit"
)

// LibProcs is GOMAXPROCS of the library-face servers: the machine's two
// cores, as a Go service on this machine would have.
const LibProcs = 2

// LibAdmissionOptions returns the admission options the library-face
// server uses: sluice's built-in defaults (config.Default, as `sluice
// serve` maps them in library mode), not values tuned for this suite. The
// AIMD limit starts wide open at the ceiling maxConcurrentRequests and
// backs off while the process's saturation signal sig is at or above
// saturationMax; up to queueSize requests wait up to queueTimeout, with
// CoDel dropping from a standing queue.
func LibAdmissionOptions(sig limit.Signal, log *slog.Logger) (admission.Options, error) {
	cfg := config.Default()
	bp := cfg.Server.Backpressure
	ceiling := bp.MaxLimit
	if m := cfg.Server.MaxConcurrentRequests; m > 0 && m < ceiling {
		ceiling = m
	}
	a, err := limit.NewAIMD(limit.AIMDOptions{
		Initial:       min(bp.StartLimit(), ceiling),
		Min:           min(bp.MinLimit, ceiling),
		Max:           ceiling,
		MaxSaturation: bp.SaturationMax,
	})
	if err != nil {
		return admission.Options{}, err
	}
	o := admission.Options{
		Limit:           a,
		QueueSize:       bp.QueueSize,
		QueueTimeout:    bp.QueueTimeout,
		Signal:          sig,
		MaxSaturation:   bp.SaturationMax,
		SampleWindow:    bp.SampleWindow,
		SmoothingFactor: bp.SmoothingFactor,
		MinShare:        cfg.Overload.PriorityMinShare,
		Logger:          log,
	}
	if cd := cfg.Overload.CoDel; cd.Enabled {
		o.CoDelTarget, o.CoDelInterval = cd.Target, cd.Interval
	}
	return o, nil
}

// LibHandler returns the library-face server's routes: the demo app at /
// (behind ctrl's admission middleware when ctrl is not nil, as
// `c.Wrap(app)`), and the app's stats and a ready path, never queued.
func LibHandler(app *demo.App, ctrl *admission.Controller) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(demo.StatsPath, app.StatsHandler())
	mux.HandleFunc(demo.ReadyPath, func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ready\n") })
	var h http.Handler = app
	if ctrl != nil {
		h = ctrl.Wrap(app)
	}
	mux.Handle("/", h)
	return mux
}

// ServeLib runs a library-face server on ln until ctx is done: the demo app
// in-process with work calibrated at unitsPerMs, plain or (withAdmission)
// behind sluice's admission middleware configured by LibAdmissionOptions
// with the process's runtime saturation signal. The caller sets
// GOMAXPROCS.
func ServeLib(ctx context.Context, ln net.Listener, unitsPerMs float64, withAdmission bool, log *slog.Logger) error {
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
		o, err := LibAdmissionOptions(rt, log)
		if err != nil {
			return err
		}
		if ctrl, err = admission.New(o); err != nil {
			return err
		}
		defer ctrl.Close()
	}
	srv := &http.Server{Handler: LibHandler(app, ctrl), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 65 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
