package demo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"time"
)

// Environment variables a demo worker reads. PORT and SLUICE_SOCKET are the
// supervisor's contract with every worker; the calibration is passed down
// so that every worker does the same work for the same ?cpu=.
const (
	EnvUnits = "SLUICE_DEMO_UNITS_PER_MS"
	EnvName  = "SLUICE_WORKER_ID"
)

// Paths a demo worker serves besides the page.
const (
	ReadyPath = "/__worker/ready"
	StatsPath = "/__worker/stats"
)

// WorkerHandler returns the demo worker's routes around app.
func WorkerHandler(app *App) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(StatsPath, app.StatsHandler())
	mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ready\n")) })
	mux.Handle("/", app)
	return mux
}

// RunWorker serves the demo page as a single-threaded renderer (one P, as
// a Node.js process has one event loop) on $PORT (127.0.0.1) or
// $SLUICE_SOCKET until ctx is done, then shuts down gracefully.
func RunWorker(ctx context.Context, getenv func(string) string) error {
	runtime.GOMAXPROCS(1)
	ln, err := workerListener(getenv)
	if err != nil {
		return err
	}
	work := Work{}
	if v := getenv(EnvUnits); v != "" {
		u, err := strconv.ParseFloat(v, 64)
		if err != nil || u <= 0 {
			return fmt.Errorf("demo: %s=%q: want a positive number", EnvUnits, v)
		}
		work = NewWork(u)
	} else {
		work = Calibrate(100 * time.Millisecond)
	}
	return ServeWorker(ctx, ln, &App{Work: work, Name: "worker " + getenv(EnvName)})
}

// ServeWorker serves app's worker routes on ln until ctx is done, then
// shuts down gracefully (in-flight renders finish).
func ServeWorker(ctx context.Context, ln net.Listener, app *App) error {
	srv := &http.Server{Handler: WorkerHandler(app), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func workerListener(getenv func(string) string) (net.Listener, error) {
	if path := getenv("SLUICE_SOCKET"); path != "" {
		os.Remove(path)
		return net.Listen("unix", path)
	}
	port := getenv("PORT")
	if port == "" {
		return nil, errors.New("demo: worker needs PORT or SLUICE_SOCKET")
	}
	return net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
}
