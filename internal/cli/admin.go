package cli

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
	"github.com/sluicehq/sluice/admission/promadmission"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// adminServer is the admin listener: /metrics, /stats, the dashboard,
// pprof, POST /workers/restart for a rolling restart and POST
// /config/reload (both refused to other sites and to Host names not
// allowed: see admin.Guard).
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
	// Every response of the main listener's handler is counted by status
	// (the probes, answered by the server before it, are not): the
	// outermost wrapper, so that sheds, 502s and 504s are seen as sent.
	// It is installed here, before the server starts, because only the
	// admin listener exports it.
	responses := new(admin.Responses)
	s.srv.Handler = responses.Wrap(s.srv.Handler)
	reg.MustRegister(
		promadmission.New(s.ctrl, promadmission.Options{}),
		admin.NewConnCollector("sluice", s.srv.Conns),
		responses.Collector("sluice"),
		admin.NewBuildInfoCollector("sluice", version),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	if s.px != nil {
		front := admin.FrontSources{Proxy: s.px.Stats}
		if s.sup != nil {
			front.Supervisor = s.sup.Stats
		}
		if s.up != nil {
			front.Upstreams = s.up.Stats
		}
		reg.MustRegister(admin.NewFrontCollector("sluice", front))
	}
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
	mux.HandleFunc("POST /config/reload", s.serveReload) // as SIGHUP, without rolling unchanged workers
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
	hs := s.ctrl.Histograms()
	st := stats{Snapshot: admin.Snapshot{Time: time.Now(), Admission: s.ctrl.Stats(), Conns: &conns,
		Latency: admin.NewLatency(&hs)}}
	if s.px != nil {
		ps := s.px.Stats()
		st.Proxy = &ps
	}
	if s.sup != nil {
		ss := s.sup.Stats()
		st.Supervisor = &ss
		eps := map[int]proxy.EndpointStats{}
		if st.Proxy != nil {
			for _, e := range st.Proxy.Endpoints {
				eps[e.ID] = e
			}
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
	if s.up != nil {
		us := s.up.Stats()
		st.Upstreams = &us
	}
	return st
}
