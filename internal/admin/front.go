package admin

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// FrontSources are the snapshots a front collector reads, once each per
// scrape; nil ones are left out (a front of static upstreams has no
// Supervisor, one of workers no Upstreams). Each must be safe for
// concurrent use, as the components' Stats methods are.
type FrontSources struct {
	Proxy      func() proxy.Stats
	Supervisor func() supervisor.Stats
	Upstreams  func() supervisor.StaticStats
}

// frontCollector exports the proxy's outcomes, each worker's limit and
// load, and the supervisor's restarts and crash-loop state.
type frontCollector struct {
	src FrontSources

	proxyCounters []proxyCounter
	slots, slotsInUse, buffered, bufferedPeak, bufferBudget, upgrades, streams,
	workerLimit, workerMax, workerInflight, workerSaturation, workers,
	restarts, exits, requestExits, crashLooping, crashLoopUntil, poolReady, upstreamUp,
	poisonQuarantined, poisonQuarantines, poisonSheds *prometheus.Desc
}

// proxyCounter is one proxy.Stats counter and its metric.
type proxyCounter struct {
	desc *prometheus.Desc
	get  func(*proxy.Stats) uint64
}

// NewFrontCollector returns the collector of sluice's front. With
// namespace "sluice" it exports:
//
//	sluice_proxy_*_total               counters of proxy.Stats: bad_gateway (502),
//	                                   gateway_timeout (504), no_worker (503),
//	                                   retries, dial_failures, hung, aborted,
//	                                   fallbacks, wasted_renders, never_dispatched,
//	                                   body_too_large (413), body_timeout (408),
//	                                   body_no_memory (503), streamed_for_memory,
//	                                   slot_waits
//	sluice_proxy_slots, _slots_in_use  worker slots routable, and taken
//	sluice_proxy_buffered_bytes, _buffered_peak_bytes, _buffer_budget_bytes
//	sluice_proxy_poison_quarantined    request shapes refused now for killing workers
//	sluice_proxy_poison_quarantines_total, _poison_sheds_total  (with workers.poison)
//	sluice_worker_limit{worker}        requests the worker may hold now
//	sluice_worker_max_concurrency{worker}
//	sluice_worker_inflight{worker}     requests it holds
//	sluice_worker_saturation_ratio{worker}  its last report, when it reports
//	sluice_workers{state}              supervised workers per state
//	sluice_worker_restarts_total{worker}    restarts after unexpected exits
//	sluice_supervisor_exits_total      unexpected exits (crashes, failed starts)
//	sluice_supervisor_request_exits_total  of those, workers that died holding requests
//	sluice_supervisor_crash_looping    1 while the crash-loop guard pauses restarts
//	sluice_supervisor_crash_loop_resume_timestamp_seconds  when they resume
//	sluice_supervisor_ready            1 when the pool can serve
//	sluice_upstream_up{upstream}       a static upstream's health
//
// The worker label is the supervised worker's slot ("0", "1", ...), which
// survives restarts, so that a restart does not start a new series; for
// static upstreams it is the upstream's address. A slot's old and new
// processes during a rolling restart are summed.
func NewFrontCollector(namespace string, src FrontSources) prometheus.Collector {
	desc := func(sub, name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, sub, name), help, labels, nil)
	}
	c := &frontCollector{
		src:               src,
		slots:             desc("proxy", "slots", "Worker slots routable: the sum of the workers' limits."),
		slotsInUse:        desc("proxy", "slots_in_use", "Worker slots taken."),
		upgrades:          desc("proxy", "upgrades_open", "Upgraded connections (WebSocket) relayed now; they take no worker slot."),
		streams:           desc("proxy", "streams_open", "Streamed responses relayed now that hold no worker slot (event streams, streams past proxy.streamHold)."),
		buffered:          desc("proxy", "buffered_bytes", "Memory held by buffered request and response bodies."),
		bufferedPeak:      desc("proxy", "buffered_peak_bytes", "Most memory ever held by buffered bodies."),
		bufferBudget:      desc("proxy", "buffer_budget_bytes", "Bound on the memory held by buffered bodies."),
		workerLimit:       desc("worker", "limit", "Requests the worker may hold now.", "worker"),
		workerMax:         desc("worker", "max_concurrency", "Most requests the worker may ever hold.", "worker"),
		workerInflight:    desc("worker", "inflight", "Requests the worker holds.", "worker"),
		workerSaturation:  desc("worker", "saturation_ratio", "Last saturation the worker reported, in [0, 1].", "worker"),
		workers:           desc("", "workers", "Supervised worker processes, by state.", "state"),
		restarts:          desc("worker", "restarts_total", "Restarts of the worker's slot after unexpected exits.", "worker"),
		exits:             desc("supervisor", "exits_total", "Unexpected worker exits: crashes and failed starts."),
		requestExits:      desc("supervisor", "request_exits_total", "Unexpected exits of workers that had answered requests and died holding some: not counted by the crash-loop guard."),
		poisonQuarantined: desc("proxy", "poison_quarantined", "Request shapes refused now (or on probation) because requests of that shape were in flight when workers died."),
		poisonQuarantines: desc("proxy", "poison_quarantines_total", "Times a request shape was quarantined for killing workers."),
		poisonSheds:       desc("proxy", "poison_sheds_total", "Requests answered 503 Sluice-Shed: poison: their shape is quarantined."),
		crashLooping:      desc("supervisor", "crash_looping", "1 while the crash-loop guard pauses restarts, else 0."),
		crashLoopUntil:    desc("supervisor", "crash_loop_resume_timestamp_seconds", "When restarts resume after a crash-loop pause."),
		poolReady:         desc("supervisor", "ready", "1 when the worker pool can serve, else 0."),
		upstreamUp:        desc("upstream", "up", "1 when the static upstream passes its health checks, else 0.", "upstream"),
	}
	counter := func(name, help string, get func(*proxy.Stats) uint64) {
		c.proxyCounters = append(c.proxyCounters, proxyCounter{desc("proxy", name, help), get})
	}
	counter("bad_gateway_total", "502 answers: no worker reached, or it failed before answering.", func(s *proxy.Stats) uint64 { return s.BadGateway })
	counter("gateway_timeout_total", "504 answers (or their fallback).", func(s *proxy.Stats) uint64 { return s.GatewayTimeout })
	counter("no_worker_total", "503 no-worker answers (or their fallback).", func(s *proxy.Stats) uint64 { return s.NoWorker })
	counter("retries_total", "Requests sent to another worker after a failure before any byte was written.", func(s *proxy.Stats) uint64 { return s.Retries })
	counter("dial_failures_total", "Attempts whose worker could not be reached.", func(s *proxy.Stats) uint64 { return s.DialFailures })
	counter("hung_total", "Workers found silent past their budget and hang grace.", func(s *proxy.Stats) uint64 { return s.Hung })
	counter("aborted_total", "Responses cut mid-body because the worker failed.", func(s *proxy.Stats) uint64 { return s.Aborted })
	counter("fallbacks_total", "Fallback responses served.", func(s *proxy.Stats) uint64 { return s.Fallbacks })
	counter("wasted_renders_total", "Responses a worker finished for a client already gone or answered 504.", func(s *proxy.Stats) uint64 { return s.WastedRenders })
	counter("never_dispatched_total", "Admitted or queued requests whose client left before they were sent: work saved.", func(s *proxy.Stats) uint64 { return s.NeverDispatched })
	counter("body_too_large_total", "413 answers.", func(s *proxy.Stats) uint64 { return s.BodyTooLarge })
	counter("body_timeout_total", "408 answers: the request body came too slowly.", func(s *proxy.Stats) uint64 { return s.BodyTimeout })
	counter("body_no_memory_total", "503 answers because buffered bodies were at their memory budget.", func(s *proxy.Stats) uint64 { return s.BodyNoMemory })
	counter("streamed_for_memory_total", "Responses streamed rather than buffered because of the memory budget.", func(s *proxy.Stats) uint64 { return s.StreamedForMemory })
	counter("unsolicited_total", "Worker connections closed because the worker sent bytes outside any response.", func(s *proxy.Stats) uint64 { return s.Unsolicited })
	counter("upgrades_total", "Upgraded connections (WebSocket) relayed.", func(s *proxy.Stats) uint64 { return s.UpgradesTotal })
	counter("upgrades_refused_total", "Upgrade requests answered 503 at proxy.maxUpgrades.", func(s *proxy.Stats) uint64 { return s.UpgradesRefused })
	counter("streams_total", "Streamed responses that gave back their worker slot to count as streams.", func(s *proxy.Stats) uint64 { return s.StreamsTotal })
	counter("streams_refused_total", "Event streams answered 503 at proxy.maxStreams.", func(s *proxy.Stats) uint64 { return s.StreamsRefused })
	counter("streams_cut_total", "Streamed responses whose worker connection sluice closed: the client left, or an idle or total bound passed.", func(s *proxy.Stats) uint64 { return s.StreamsCut })
	counter("slot_waits_total", "Admitted requests that found no idle worker slot and waited for one.", func(s *proxy.Stats) uint64 { return s.SlotWaits })
	return c
}

func (c *frontCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, pc := range c.proxyCounters {
		ch <- pc.desc
	}
	for _, d := range []*prometheus.Desc{c.slots, c.slotsInUse, c.upgrades, c.streams, c.buffered, c.bufferedPeak, c.bufferBudget,
		c.workerLimit, c.workerMax, c.workerInflight, c.workerSaturation, c.workers,
		c.restarts, c.exits, c.requestExits, c.crashLooping, c.crashLoopUntil, c.poolReady, c.upstreamUp,
		c.poisonQuarantined, c.poisonQuarantines, c.poisonSheds} {
		ch <- d
	}
}

func (c *frontCollector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	var sup *supervisor.Stats
	if c.src.Supervisor != nil {
		s := c.src.Supervisor()
		sup = &s
		c.collectSupervisor(ch, sup)
	}
	if c.src.Proxy != nil {
		ps := c.src.Proxy()
		for _, pc := range c.proxyCounters {
			ch <- prometheus.MustNewConstMetric(pc.desc, prometheus.CounterValue, float64(pc.get(&ps)))
		}
		gauge(c.slots, float64(ps.Slots))
		gauge(c.slotsInUse, float64(ps.Outstanding))
		gauge(c.upgrades, float64(ps.Upgrades))
		gauge(c.streams, float64(ps.Streams))
		gauge(c.buffered, float64(ps.BufferedBytes))
		gauge(c.bufferedPeak, float64(ps.BufferedPeak))
		gauge(c.bufferBudget, float64(ps.BufferBudget))
		if pz := ps.Poison; pz != nil {
			gauge(c.poisonQuarantined, float64(pz.Quarantined))
			ch <- prometheus.MustNewConstMetric(c.poisonQuarantines, prometheus.CounterValue, float64(pz.Quarantines))
			ch <- prometheus.MustNewConstMetric(c.poisonSheds, prometheus.CounterValue, float64(pz.Sheds))
		}
		c.collectWorkers(ch, &ps, sup)
	}
	if c.src.Upstreams != nil {
		for _, u := range c.src.Upstreams().Upstreams {
			gauge(c.upstreamUp, b2f(u.Up), u.Addr)
		}
	}
}

func (c *frontCollector) collectSupervisor(ch chan<- prometheus.Metric, s *supervisor.Stats) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	gauge(c.poolReady, b2f(s.Ready))
	gauge(c.crashLooping, b2f(s.CrashLooping))
	if s.CrashLooping && !s.CrashLoopUntil.IsZero() {
		gauge(c.crashLoopUntil, float64(s.CrashLoopUntil.UnixNano())/1e9)
	}
	ch <- prometheus.MustNewConstMetric(c.exits, prometheus.CounterValue, float64(s.Exits))
	ch <- prometheus.MustNewConstMetric(c.requestExits, prometheus.CounterValue, float64(s.RequestExits))
	byState := map[string]int{}
	for st := supervisor.StateStarting; st <= supervisor.StateExited; st++ {
		byState[st.String()] = 0 // every state from the first scrape
	}
	restarts := map[int]int{}
	for _, w := range s.Workers {
		byState[w.State.String()]++
		restarts[w.Slot] = max(restarts[w.Slot], w.Restarts)
	}
	for st, n := range byState {
		gauge(c.workers, float64(n), st)
	}
	for slot, n := range restarts {
		ch <- prometheus.MustNewConstMetric(c.restarts, prometheus.CounterValue, float64(n), strconv.Itoa(slot))
	}
}

// collectWorkers exports each worker's limit and load, keyed by slot when
// supervised (sup non-nil), else by address.
func (c *frontCollector) collectWorkers(ch chan<- prometheus.Metric, ps *proxy.Stats, sup *supervisor.Stats) {
	slotOf := map[int]int{}
	if sup != nil {
		for _, w := range sup.Workers {
			slotOf[w.ID] = w.Slot
		}
	}
	type load struct {
		limit, max, inflight int
		sat                  float64
	}
	loads := map[string]*load{}
	var order []string
	for _, e := range ps.Endpoints {
		name := e.Addr
		if sup != nil {
			slot, ok := slotOf[e.ID]
			if !ok {
				continue // reaped between the two snapshots
			}
			name = strconv.Itoa(slot)
		}
		l := loads[name]
		if l == nil {
			l = &load{sat: -1}
			loads[name] = l
			order = append(order, name)
		}
		l.inflight += e.Outstanding
		if !e.Draining {
			// A draining process takes no new requests: its limit is
			// not the slot's.
			l.limit += e.Limit
			l.max += e.Concurrency
			l.sat = max(l.sat, e.Saturation)
		}
	}
	for _, name := range order {
		l := loads[name]
		ch <- prometheus.MustNewConstMetric(c.workerLimit, prometheus.GaugeValue, float64(l.limit), name)
		ch <- prometheus.MustNewConstMetric(c.workerMax, prometheus.GaugeValue, float64(l.max), name)
		ch <- prometheus.MustNewConstMetric(c.workerInflight, prometheus.GaugeValue, float64(l.inflight), name)
		if l.sat >= 0 {
			ch <- prometheus.MustNewConstMetric(c.workerSaturation, prometheus.GaugeValue, l.sat, name)
		}
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
