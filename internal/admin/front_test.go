package admin_test

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/poison"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// The front collector exports the proxy's counters, each worker slot's
// limit and load (a rolling restart's old and new process summed, the
// draining one's limit left out), and the supervisor's state.
func TestFrontCollector(t *testing.T) {
	until := time.Unix(1700000000, 0)
	ps := proxy.Stats{
		Slots: 5, Outstanding: 3, BadGateway: 2, GatewayTimeout: 1, Retries: 4, WastedRenders: 6,
		BufferedBytes: 100, BufferedPeak: 300, BufferBudget: 1000,
		Upgrades: 7, UpgradesTotal: 12, UpgradesRefused: 1,
		Poison: &poison.Stats{Quarantined: 2, Quarantines: 5, Sheds: 40},
		Endpoints: []proxy.EndpointStats{
			{ID: 7, Addr: "a", Limit: 1, Concurrency: 1, Outstanding: 1, Saturation: -1, Draining: true},
			{ID: 9, Addr: "b", Limit: 2, Concurrency: 4, Outstanding: 1, Saturation: 0.5},
			{ID: 8, Addr: "c", Limit: 3, Concurrency: 3, Outstanding: 1, Saturation: -1},
		},
	}
	ss := supervisor.Stats{
		Ready: true, CrashLooping: true, CrashLoopUntil: until, Exits: 11, RequestExits: 4,
		Workers: []supervisor.WorkerInfo{
			{ID: 7, Slot: 0, State: supervisor.StateDraining, Restarts: 2},
			{ID: 9, Slot: 0, State: supervisor.StateReady, Restarts: 2},
			{ID: 8, Slot: 1, State: supervisor.StateReady},
		},
	}
	values, types := scrape(t, admin.NewFrontCollector("sluice", admin.FrontSources{
		Proxy:      func() proxy.Stats { return ps },
		Supervisor: func() supervisor.Stats { return ss },
	}))
	want := map[string]string{
		"sluice_proxy_bad_gateway_total":                        "2",
		"sluice_proxy_gateway_timeout_total":                    "1",
		"sluice_proxy_retries_total":                            "4",
		"sluice_proxy_wasted_renders_total":                     "6",
		"sluice_proxy_slots":                                    "5",
		"sluice_proxy_slots_in_use":                             "3",
		"sluice_proxy_upgrades_open":                            "7",
		"sluice_proxy_upgrades_total":                           "12",
		"sluice_proxy_upgrades_refused_total":                   "1",
		"sluice_proxy_buffered_bytes":                           "100",
		"sluice_proxy_buffered_peak_bytes":                      "300",
		"sluice_proxy_buffer_budget_bytes":                      "1000",
		`sluice_worker_limit{worker="0"}`:                       "2",
		`sluice_worker_limit{worker="1"}`:                       "3",
		`sluice_worker_inflight{worker="0"}`:                    "2",
		`sluice_worker_inflight{worker="1"}`:                    "1",
		`sluice_worker_max_concurrency{worker="0"}`:             "4",
		`sluice_worker_saturation_ratio{worker="0"}`:            "0.5",
		`sluice_worker_restarts_total{worker="0"}`:              "2",
		`sluice_worker_restarts_total{worker="1"}`:              "0",
		`sluice_workers{state="ready"}`:                         "2",
		`sluice_workers{state="draining"}`:                      "1",
		`sluice_workers{state="exited"}`:                        "0",
		"sluice_supervisor_exits_total":                         "11",
		"sluice_supervisor_request_exits_total":                 "4",
		"sluice_proxy_poison_quarantined":                       "2",
		"sluice_proxy_poison_quarantines_total":                 "5",
		"sluice_proxy_poison_sheds_total":                       "40",
		"sluice_supervisor_crash_looping":                       "1",
		"sluice_supervisor_ready":                               "1",
		"sluice_supervisor_crash_loop_resume_timestamp_seconds": "1.7e+09",
	}
	for k, v := range want {
		if values[k] != v {
			t.Errorf("%s: got %q, want %q", k, values[k], v)
		}
	}
	if v, ok := values[`sluice_worker_saturation_ratio{worker="1"}`]; ok {
		t.Errorf("worker 1 reports no saturation: got %s, want no series", v)
	}
	for name, typ := range map[string]string{"sluice_proxy_bad_gateway_total": "counter", "sluice_worker_limit": "gauge",
		"sluice_worker_restarts_total": "counter", "sluice_supervisor_crash_looping": "gauge"} {
		if types[name] != typ {
			t.Errorf("type of %s: got %q, want %q", name, types[name], typ)
		}
	}
}

// Static upstreams are keyed by address, and have health gauges.
func TestFrontCollectorUpstreams(t *testing.T) {
	values, _ := scrape(t, admin.NewFrontCollector("sluice", admin.FrontSources{
		Proxy: func() proxy.Stats {
			return proxy.Stats{Endpoints: []proxy.EndpointStats{{ID: 1, Addr: "10.0.0.1:80", Limit: 4, Concurrency: 4, Saturation: -1}}}
		},
		Upstreams: func() supervisor.StaticStats {
			return supervisor.StaticStats{Upstreams: []supervisor.UpstreamInfo{{ID: 1, Addr: "10.0.0.1:80", Up: true}, {ID: 2, Addr: "10.0.0.2:80"}}}
		},
	}))
	for k, v := range map[string]string{
		`sluice_worker_limit{worker="10.0.0.1:80"}`:  "4",
		`sluice_upstream_up{upstream="10.0.0.1:80"}`: "1",
		`sluice_upstream_up{upstream="10.0.0.2:80"}`: "0",
	} {
		if values[k] != v {
			t.Errorf("%s: got %q, want %q", k, values[k], v)
		}
	}
	if _, ok := values["sluice_supervisor_ready"]; ok {
		t.Error("got supervisor metrics without a supervisor")
	}
}
