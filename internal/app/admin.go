package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sluicehq/sluice/admission/promadmission"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/quota"
)

// adminServer is the admin listener: /metrics, /stats, the dashboard,
// pprof, POST /workers/restart for a rolling restart and POST
// /config/reload (both refused to other sites and to Host names not
// allowed: see admin.Guard).
type adminServer struct {
	addr string
	srv  *http.Server
}

// Stats is the /stats document: the dashboard's Snapshot plus what only
// the front has.
type Stats struct {
	admin.Snapshot
	Proxy      *proxy.Stats            `json:"proxy,omitempty"`
	Supervisor *supervisor.Stats       `json:"supervisor,omitempty"`
	Upstreams  *supervisor.StaticStats `json:"upstreams,omitempty"`
	Quota      *quota.Stats            `json:"quota,omitempty"`
}

// newAdminServer builds the admin listener's handler; responses counts
// the front's responses by status.
func newAdminServer(a *App, responses *admin.Responses) *adminServer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		promadmission.New(a.ctrl, promadmission.Options{}),
		admin.NewConnCollector("sluice", a.srv.Conns),
		responses.Collector("sluice"),
		admin.NewBuildInfoCollector("sluice", a.version),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if f, ok := a.mode.(*front); ok {
		reg.MustRegister(admin.NewFrontCollector("sluice", f.sources()))
	}
	if a.quota != nil {
		reg.MustRegister(admin.NewQuotaCollector("sluice", a.quota.Stats))
	}
	title, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.Handle("/", admin.Handler(admin.Options{
		Registry: reg,
		Stats:    func() any { return a.snapshot() },
		Pprof:    a.cfg.Admin.PProf,
		Title:    "sluice on " + title,
		Logger:   a.log,
	}))
	mux.HandleFunc("POST /workers/restart", a.serveRestart)
	mux.HandleFunc("POST /config/reload", a.serveReload) // as SIGHUP, without rolling unchanged workers
	// Every state-changing endpoint, these and any added later, refuses
	// cross-site requests and foreign Host names.
	h := admin.Guard(mux, admin.GuardOptions{AllowedHosts: a.cfg.Admin.AllowedHosts, Logger: a.log})
	return &adminServer{addr: a.cfg.Admin.Listen, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
}

// serveRestart is POST /workers/restart: a rolling restart, which
// outlives the request (the run group owns it).
func (a *App) serveRestart(w http.ResponseWriter, r *http.Request) {
	sup := a.Supervisor()
	if sup == nil {
		http.Error(w, "no supervised workers", http.StatusNotFound)
		return
	}
	if !a.tasks.Go(func(ctx context.Context) { a.rollWorkers(ctx, sup, false) }) {
		http.Error(w, "sluice is stopping", http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, "rolling restart started\n")
}

func (s *adminServer) listen() (net.Listener, error) {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener: %w%s", err, inUse(err, `admin.listen in the file, or --admin, to a free address, or to "off"`))
	}
	return ln, nil
}

// serve serves on ln until ctx is done, then shuts down: the requests in
// flight get 2 s. A failure of the listener is logged and leaves the front
// serving: the admin listener is not what the clients need.
func (s *adminServer) serve(ctx context.Context, ln net.Listener, log *slog.Logger) {
	log.Info("admin: serving", "addr", ln.Addr().String())
	shutDown := make(chan struct{})
	context.AfterFunc(ctx, func() { s.shutdown(); close(shutDown) })
	if err := s.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		log.Error("admin listener", "err", err)
	}
	<-shutDown
}

func (s *adminServer) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	s.srv.Shutdown(ctx)
}

// snapshot is the /stats document.
func (a *App) snapshot() Stats {
	conns := a.srv.Conns()
	hs := a.ctrl.Histograms()
	st := Stats{Snapshot: admin.Snapshot{Time: time.Now(), Admission: a.ctrl.Stats(), Conns: &conns,
		Latency: admin.NewLatency(&hs)}}
	a.mode.stats(&st)
	if a.quota != nil {
		qs := a.quota.Stats()
		st.Quota = &qs
	}
	return st
}

// sources are the front's stats for its Prometheus collector.
func (f *front) sources() admin.FrontSources {
	s := admin.FrontSources{Proxy: f.px.Stats}
	switch p := f.pool.(type) {
	case *supervisor.Supervisor:
		s.Supervisor = p.Stats
	case *supervisor.Static:
		s.Upstreams = p.Stats
	}
	return s
}

// stats adds the proxy's and the pool's to st, and each worker's row of
// the dashboard.
func (f *front) stats(st *Stats) {
	ps := f.px.Stats()
	st.Proxy = &ps
	switch p := f.pool.(type) {
	case *supervisor.Static:
		us := p.Stats()
		st.Upstreams = &us
	case *supervisor.Supervisor:
		ss := p.Stats()
		st.Supervisor = &ss
		eps := map[int]proxy.EndpointStats{}
		for _, e := range ps.Endpoints {
			eps[e.ID] = e
		}
		for _, w := range ss.Workers {
			aw := admin.Worker{
				ID: fmt.Sprintf("worker-%d", w.ID), State: w.State.String(), PID: w.PID,
				Restarts: w.Restarts, Saturation: -1,
			}
			if e, ok := eps[w.ID]; ok {
				aw.Inflight, aw.Limit, aw.MaxConcurrency, aw.Saturation = e.Outstanding, e.Limit, e.Concurrency, e.Saturation
			}
			st.Workers = append(st.Workers, aw)
		}
	}
}
