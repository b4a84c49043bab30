package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// adminServer is the admin listener: /metrics, /stats, the dashboard,
// pprof, and POST /workers/restart for a rolling restart (refused to other
// sites and to Host names not allowed: see admin.Guard).
type adminServer struct {
	s   *service
	srv *http.Server
	ln  net.Listener
}

// stats is the /stats document: the dashboard's Snapshot plus what only
// the front has.
type stats struct {
	admin.Snapshot
	Proxy      *proxy.Stats            `json:"proxy,omitempty"`
	Supervisor *supervisor.Stats       `json:"supervisor,omitempty"`
	Upstreams  *supervisor.StaticStats `json:"upstreams,omitempty"`
}

func newAdminServer(s *service) *adminServer {
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		admin.NewAdmissionCollector("sluice", s.ctrl.Stats),
		admin.NewConnCollector("sluice", s.srv.Conns),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	title, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.Handle("/", admin.Handler(admin.Options{
		Registry: reg,
		Stats:    s.snapshot,
		Pprof:    s.cfg.Admin.PProf,
		Title:    "sluice on " + title,
		Logger:   s.log,
	}))
	mux.HandleFunc("POST /workers/restart", func(w http.ResponseWriter, r *http.Request) {
		if s.sup == nil {
			http.Error(w, "no supervised workers", http.StatusNotFound)
			return
		}
		// The restart outlives this request: it is the supervisor's.
		go s.rollingRestart(context.Background())
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, "rolling restart started\n")
	})
	// Every state-changing endpoint, this one and any added later, refuses
	// cross-site requests and foreign Host names.
	h := admin.Guard(mux, admin.GuardOptions{AllowedHosts: s.cfg.Admin.AllowedHosts, Logger: s.log})
	return &adminServer{s: s, srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
}

func (a *adminServer) start() error {
	ln, err := net.Listen("tcp", a.s.cfg.Admin.Listen)
	if err != nil {
		return fmt.Errorf("admin listener: %w", err)
	}
	a.ln = ln
	a.s.log.Info("admin: serving", "addr", ln.Addr().String())
	go func() {
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.s.log.Error("admin listener", "err", err)
		}
	}()
	return nil
}

func (a *adminServer) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	a.srv.Shutdown(ctx)
}

// snapshot is the /stats document.
func (s *service) snapshot() any {
	conns := s.srv.Conns()
	st := stats{Snapshot: admin.Snapshot{Time: time.Now(), Admission: s.ctrl.Stats(), Conns: &conns}}
	if s.px != nil {
		ps := s.px.Stats()
		st.Proxy = &ps
	}
	if s.sup != nil {
		ss := s.sup.Stats()
		st.Supervisor = &ss
		inflight := map[int]int{}
		if st.Proxy != nil {
			for _, e := range st.Proxy.Endpoints {
				inflight[e.ID] = e.Outstanding
			}
		}
		for _, w := range ss.Workers {
			st.Workers = append(st.Workers, admin.Worker{
				ID: fmt.Sprintf("worker-%d", w.ID), State: w.State.String(), PID: w.PID,
				Inflight: inflight[w.ID], Restarts: w.Restarts,
			})
		}
	}
	if s.up != nil {
		us := s.up.Stats()
		st.Upstreams = &us
	}
	return st
}
