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
	"sync"
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

// WorkerHandler returns the demo worker's routes around app. Every page
// response carries Sluice-Saturation, the share of the last 100 ms or more
// that the worker spent rendering: its one P is its event loop, and this is
// what node/sluice-worker reports for a Node.js worker.
func WorkerHandler(app *App) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(StatsPath, app.StatsHandler())
	mux.HandleFunc(ReadyPath, func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("ready\n")) })
	m := &saturationMeter{busy: app.busy.Load, at: time.Now(), window: 100 * time.Millisecond}
	mux.Handle("/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		app.ServeHTTP(&reportingWriter{ResponseWriter: w, m: m}, r)
	}))
	return mux
}

// saturationMeter measures the busy share of the worker over the last
// interval of at least window, lazily, when a response is written.
type saturationMeter struct {
	busy   func() int64 // nanoseconds busy, ever
	window time.Duration

	mu     sync.Mutex
	at     time.Time // start of the current interval
	atBusy int64
	last   float64
}

// read returns the saturation to report at now.
func (m *saturationMeter) read(now time.Time) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if d := now.Sub(m.at); d >= m.window || m.last == 0 && d > 0 {
		b := m.busy()
		m.last = min(max(float64(b-m.atBusy)/float64(d), 0), 1)
		if d >= m.window {
			m.at, m.atBusy = now, b
		}
	}
	return m.last
}

// reportingWriter sets Sluice-Saturation when the response's header is
// written.
type reportingWriter struct {
	http.ResponseWriter
	m    *saturationMeter
	done bool
}

func (w *reportingWriter) report() {
	if !w.done {
		w.done = true
		w.Header().Set("Sluice-Saturation", strconv.FormatFloat(w.m.read(time.Now()), 'f', 3, 64))
	}
}

func (w *reportingWriter) WriteHeader(code int) { w.report(); w.ResponseWriter.WriteHeader(code) }

func (w *reportingWriter) Write(b []byte) (int, error) { w.report(); return w.ResponseWriter.Write(b) }

func (w *reportingWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

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
	return serveWorker(ctx, ln, &App{Work: work, Name: "worker " + getenv(EnvName)}, getenv(EnvFaults) == "1")
}

// ServeWorker serves app's worker routes on ln until ctx is done, then
// shuts down gracefully (in-flight renders finish).
func ServeWorker(ctx context.Context, ln net.Listener, app *App) error {
	return serveWorker(ctx, ln, app, false)
}

func serveWorker(ctx context.Context, ln net.Listener, app *App, faults bool) error {
	h := WorkerHandler(app)
	if faults {
		h = withFaults(h)
	}
	return ServeUntil(ctx, &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}, ln, 10*time.Second)
}

// ServeUntil serves srv on ln until ctx is done, then shuts it down
// gracefully, giving in-flight requests up to grace.
func ServeUntil(ctx context.Context, srv *http.Server, ln net.Listener, grace time.Duration) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
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
