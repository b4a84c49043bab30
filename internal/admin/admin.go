// Package admin serves sluice's admin listener (127.0.0.1:9090 by default,
// never public unless configured so): Prometheus metrics, a JSON snapshot,
// a live dashboard and pprof.
//
//	/              the dashboard: one self-contained page that polls /stats
//	               every second and draws the last five minutes
//	/stats         JSON of the caller's snapshot (see Snapshot for the fields
//	               the dashboard reads)
//	/metrics       Prometheus exposition of the caller's registry
//	/debug/pprof/  net/http/pprof, mounted here only when Options.Pprof is set
//
// Nothing here touches a global: the registry and the snapshot are passed
// in. (Importing net/http/pprof registers its handlers on
// http.DefaultServeMux, which sluice never serves.)
package admin

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/pprof"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/server"
)

// Options configure the admin handler. The zero value serves the dashboard
// and empty /stats and /metrics.
type Options struct {
	// Registry is gathered on every /metrics request. Nil means an empty
	// registry; never the global one.
	Registry *prometheus.Registry

	// Stats returns the /stats document, encoded as JSON. It is called once
	// per request, concurrently: it must be safe for concurrent use. Nil
	// means {}.
	Stats func() any

	// Pprof mounts net/http/pprof under /debug/pprof/.
	Pprof bool

	// Title names the instance on the dashboard (e.g. the host name).
	// Empty means "admin".
	Title string

	// Logger receives metric-gathering errors. Nil means none.
	Logger *slog.Logger
}

// Snapshot is a /stats document the dashboard understands; Stats may return
// any value that encodes to these fields. The dashboard also reads an
// admission.Stats at the top level, without the "admission" wrapper.
type Snapshot struct {
	// Time is when the snapshot was taken.
	Time time.Time `json:"time"`
	// Admission is the admission controller's state and counters.
	Admission admission.Stats `json:"admission"`
	// Conns are the main listener's connection counts.
	Conns *server.ConnStats `json:"conns,omitempty"`
	// Workers are the supervised worker processes, if any.
	Workers []Worker `json:"workers,omitempty"`
	// Latency is the admission controller's latency histograms, from
	// which the dashboard draws goodput and percentiles.
	Latency *Latency `json:"latency,omitempty"`
}

// Latency is an admission controller's histograms summed over priority
// classes, as the dashboard reads them. Counts are per bucket, not
// cumulative, with one more entry than Bounds: those above the last bound.
type Latency struct {
	// Bounds are the buckets' upper bounds, in seconds.
	Bounds []float64 `json:"bounds"`
	// QueueWait counts the admitted requests' waits for a slot.
	QueueWait []uint64 `json:"queueWait"`
	// Service counts the service times of requests completed (outcome
	// done): its total is the goodput's counter.
	Service []uint64 `json:"service"`
}

// NewLatency sums h over the priority classes: the admitted requests'
// queue waits and the completed requests' service times.
func NewLatency(h *admission.Histograms) *Latency {
	var wait, svc admission.Histogram
	for _, p := range admission.Priorities() {
		w, s := h.QueueWait(p, admission.WaitAdmitted), h.Service(p, admission.ServiceDone)
		wait.Add(&w)
		svc.Add(&s)
	}
	l := &Latency{Bounds: make([]float64, admission.HistogramBuckets)}
	for i := range l.Bounds {
		l.Bounds[i] = admission.BucketBound(i).Seconds()
	}
	l.QueueWait = wait.Counts[:]
	l.Service = svc.Counts[:]
	return l
}

// Worker is one supervised worker process as the dashboard shows it.
type Worker struct {
	// ID names the worker (e.g. "worker-3").
	ID string `json:"id"`
	// State is the supervisor's name of the worker's state (starting,
	// warming, ready, draining, stopping or exited: supervisor.State);
	// the dashboard shows any other value as it is.
	State string `json:"state"`
	// PID is the process id, 0 when not running.
	PID int `json:"pid,omitempty"`
	// Inflight is the number of requests the worker is serving.
	Inflight int `json:"inflight"`
	// Restarts counts the worker's restarts.
	Restarts int `json:"restarts"`
	// Limit is how many requests the worker may hold now; MaxConcurrency
	// the most it may ever hold (the two are equal for a fixed limit).
	Limit          int `json:"limit"`
	MaxConcurrency int `json:"maxConcurrency"`
	// Saturation is the last saturation the worker reported, in [0, 1], or
	// -1 when it reports none.
	Saturation float64 `json:"saturation"`
}

// Handler returns the admin listener's handler. It is safe for concurrent
// use.
func Handler(o Options) http.Handler {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var gatherer prometheus.Gatherer = prometheus.NewRegistry()
	if o.Registry != nil {
		gatherer = o.Registry
	}
	page := dashboard(o.Title, o.Pprof)

	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Type", "text/html; charset=utf-8")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Content-Type-Options", "nosniff")
		// The page is self-contained: the browser is told to load
		// nothing from anywhere, and to talk to this origin only.
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "+
			"connect-src 'self'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		w.Write(page)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		var v any = struct{}{}
		if o.Stats != nil {
			v = o.Stats()
		}
		b, err := json.Marshal(v)
		if err != nil {
			logger.Error("admin: encoding /stats", "err", err)
			http.Error(w, "admin: encoding stats: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Write(append(b, '\n'))
	})
	mux.Handle("/metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{
		ErrorLog:          promLogger{logger},
		ErrorHandling:     promhttp.ContinueOnError,
		EnableOpenMetrics: true,
	}))
	if o.Pprof {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	return mux
}

// promLogger is promhttp's Logger on slog.
type promLogger struct{ log *slog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error("admin: /metrics: " + strings.TrimSpace(fmt.Sprintln(v...)))
}
