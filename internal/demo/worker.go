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
	mux.Handle("/", reportSaturation(m, time.Now, app))
	return mux
}

// reportSaturation serves h with Sluice-Saturation, m's reading at now(),
// on every response, and reads m when each request arrives as well.
//
// m is read lazily, so after an idle stretch (a worker's first request, or
// a pause in traffic) its interval spans the whole stretch, and a response
// read only at the end of a 150 ms render would report that render diluted
// in seconds of idling: 0.05 rather than 1. The front then took the worker
// for an idle one and raised its limit (from 4 to 5 and 8 on two workers
// rendering one request at a time, whose requests then interleaved and
// took over a second). Read at the request's start, an interval that is
// already a full window closes then, so the response's reading covers the
// time since the request began.
func reportSaturation(m *saturationMeter, now func() time.Time, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		m.read(now())
		h.ServeHTTP(&reportingWriter{ResponseWriter: w, m: m, now: now}, r)
	})
}

// saturationMeter measures the busy share of the worker over the last
// interval of at least window, lazily, when a request arrives and when its
// response is written (see reportSaturation).
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
	// A full window closes the interval: its share is the reading, and
	// the next interval starts now. Short of a window, the reading is the
	// last full window's, unless that read 0 (or there was none yet, at
	// the worker's start): then it is the share since that window closed,
	// and the interval stays open. Since a request's arrival closes an
	// idle stretch, which reads 0 as no render finished in it, a render
	// shorter than the window after an idle stretch reports its own share
	// at its response rather than the stretch's 0.
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
	now  func() time.Time
	done bool
}

func (w *reportingWriter) report() {
	if !w.done {
		w.done = true
		w.Header().Set("Sluice-Saturation", strconv.FormatFloat(w.m.read(w.now()), 'f', 3, 64))
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
