package admin

// MetricNames are the metric families sluice's admin /metrics exports
// under the namespace "sluice", besides the Go runtime's go_* and the
// process's process_*: for whatever reads them (alert rules, dashboards)
// to be checked against. Some appear only in a mode or a state: the front
// ones with workers or upstreams, the supervisor ones with workers,
// sluice_upstream_up with upstreams, sluice_quota_* with tenants.quota, the saturation ratios with a signal,
// the crash-loop resume time while crash-looping, sluice_requests_total
// and the histograms after the first request. A test of cmd/sluice
// scrapes a running sluice against this list.
var MetricNames = []string{
	// admission/promadmission
	"sluice_limit",
	"sluice_inflight",
	"sluice_queued",
	"sluice_saturation_ratio",
	"sluice_latency_ewma_seconds",
	"sluice_admitted_total",
	"sluice_admitted_after_wait_total",
	"sluice_cancelled_total",
	"sluice_shed_total",
	"sluice_queue_wait_seconds",
	"sluice_service_time_seconds",
	// NewConnCollector
	"sluice_connections_open",
	"sluice_connections_idle",
	"sluice_connections_parked",
	"sluice_connections_probe_only",
	"sluice_connections_refused_total",
	"sluice_connections_reclaimed_total",
	// Responses, NewBuildInfoCollector
	"sluice_requests_total",
	"sluice_build_info",
	// NewFrontCollector
	"sluice_proxy_bad_gateway_total",
	"sluice_proxy_gateway_timeout_total",
	"sluice_proxy_no_worker_total",
	"sluice_proxy_retries_total",
	"sluice_proxy_dial_failures_total",
	"sluice_proxy_hung_total",
	"sluice_proxy_aborted_total",
	"sluice_proxy_fallbacks_total",
	"sluice_proxy_wasted_renders_total",
	"sluice_proxy_never_dispatched_total",
	"sluice_proxy_body_too_large_total",
	"sluice_proxy_body_timeout_total",
	"sluice_proxy_body_no_memory_total",
	"sluice_proxy_streamed_for_memory_total",
	"sluice_proxy_slot_waits_total",
	"sluice_proxy_upgrades_total",
	"sluice_proxy_upgrades_refused_total",
	"sluice_proxy_upgrades_open",
	"sluice_proxy_slots",
	"sluice_proxy_slots_in_use",
	"sluice_proxy_buffered_bytes",
	"sluice_proxy_buffered_peak_bytes",
	"sluice_proxy_buffer_budget_bytes",
	"sluice_worker_limit",
	"sluice_worker_max_concurrency",
	"sluice_worker_inflight",
	"sluice_worker_saturation_ratio",
	"sluice_worker_restarts_total",
	"sluice_workers",
	"sluice_supervisor_exits_total",
	"sluice_supervisor_crash_looping",
	"sluice_supervisor_crash_loop_resume_timestamp_seconds",
	"sluice_supervisor_ready",
	"sluice_upstream_up",
	// NewQuotaCollector, with tenants.quota
	"sluice_quota_requests_total",
	"sluice_quota_store_up",
	"sluice_quota_store_errors_total",
	"sluice_quota_instances",
	"sluice_quota_tenants",
}
