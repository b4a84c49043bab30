package proxy

import (
	"time"

	"github.com/sluicehq/sluice/internal/poison"
)

// Stats is a snapshot of a Proxy for the admin page.
type Stats struct {
	// Endpoints are the known workers, routable and draining, in the order
	// they were added.
	Endpoints []EndpointStats `json:"endpoints"`
	// Slots is the number of routable worker slots: the sum of their
	// limits.
	Slots int `json:"slots"`
	// Ahead is the number of requests the routable workers may hold
	// beyond Slots, waiting in a busy worker: the sum of their
	// EndpointStats.Lookahead (Options.Lookahead each, 0 while contended or slow).
	Ahead int `json:"ahead"`
	// Outstanding is the number of slots taken, on every endpoint.
	Outstanding int `json:"outstanding"`

	// WastedRenders counts responses a worker finished for a client that
	// had already gone or been answered 504.
	WastedRenders uint64 `json:"wastedRenders"`
	// NeverDispatched counts admitted or queued requests whose client left
	// before the request was sent: work saved.
	NeverDispatched uint64 `json:"neverDispatched"`
	// BadGateway counts 502 answers: no worker could be reached, or the
	// worker failed before answering (after the retry, if any).
	BadGateway uint64 `json:"badGateway"`
	// GatewayTimeout counts 504 answers (or their Fallback).
	GatewayTimeout uint64 `json:"gatewayTimeout"`
	// NoWorker counts 503 "no worker" answers (or their Fallback).
	NoWorker uint64 `json:"noWorker"`
	// Retries counts requests sent to another worker after a failure
	// other than a refused dial that happened before any byte of them was
	// written (a kept-alive connection found closed, say). A request that
	// reached its worker is never sent again.
	Retries uint64 `json:"retries"`
	// DialFailures counts attempts whose worker could not be reached.
	DialFailures uint64 `json:"dialFailures"`
	// Hung counts workers found silent past the budget and HangGrace.
	Hung uint64 `json:"hung"`
	// Aborted counts responses cut mid-body because the worker failed.
	Aborted uint64 `json:"aborted"`
	// Fallbacks counts Fallback responses served.
	Fallbacks uint64 `json:"fallbacks"`
	// BodyTooLarge and BodyTimeout count 413 and 408 answers.
	BodyTooLarge uint64 `json:"bodyTooLarge"`
	BodyTimeout  uint64 `json:"bodyTimeout"`
	// BodyNoMemory counts request bodies answered 503 because buffered
	// bodies were at MaxBufferedBytes.
	BodyNoMemory uint64 `json:"bodyNoMemory"`
	// StreamedForMemory counts responses relayed as a stream, rather than
	// buffered, because buffered bodies were at MaxBufferedBytes.
	StreamedForMemory uint64 `json:"streamedForMemory"`
	// Unsolicited counts connections to workers closed because the worker
	// sent bytes outside any response: past the end of one (a
	// Content-Length too short), or while the connection was idle. Such
	// bytes would become the next request's response; a worker that sent
	// them has none of its connections reused from then on.
	Unsolicited uint64 `json:"unsolicited"`
	// BufferedBytes is the memory held now by buffered bodies, requests and
	// responses; BufferedPeak the most ever held; BufferBudget the bound
	// (MaxBufferedBytes).
	BufferedBytes int64 `json:"bufferedBytes"`
	BufferedPeak  int64 `json:"bufferedPeak"`
	BufferBudget  int64 `json:"bufferBudget"`
	// SlotWaits counts admitted requests that found no idle slot and had to
	// wait: retries whose other workers were busy, or a request admitted
	// in the instant a worker's limit fell.
	SlotWaits uint64 `json:"slotWaits"`
	// Upgrades is the number of upgraded connections (WebSocket, say)
	// relayed now; they take no slot. UpgradesTotal counts those ever
	// relayed, UpgradesRefused the upgrade requests answered 503 at
	// MaxUpgrades, and MaxUpgrades is that bound.
	Upgrades        int    `json:"upgrades"`
	UpgradesTotal   uint64 `json:"upgradesTotal"`
	UpgradesRefused uint64 `json:"upgradesRefused"`
	MaxUpgrades     int    `json:"maxUpgrades"`
	// Poison is Options.Poison's snapshot: the shapes quarantined and the
	// requests refused; nil without it.
	Poison *poison.Stats `json:"poison,omitempty"`
	// Streams is the number of streamed responses relayed now that hold
	// no render slot (event streams, and streams past StreamHold);
	// StreamsTotal counts those ever relayed so, StreamsRefused the event
	// streams answered 503 at MaxStreams, and MaxStreams is that bound.
	// StreamsCut counts streamed responses whose worker connection sluice
	// closed before their end: the client left, or the stream passed its
	// idle or total bound.
	Streams        int64  `json:"streams"`
	StreamsTotal   uint64 `json:"streamsTotal"`
	StreamsRefused uint64 `json:"streamsRefused"`
	StreamsCut     uint64 `json:"streamsCut"`
	MaxStreams     int    `json:"maxStreams"`
}

// EndpointStats describes one worker.
type EndpointStats struct {
	ID      int    `json:"id"`
	Network string `json:"network"`
	Addr    string `json:"addr"`
	// Concurrency is the most requests it may hold (the maximum, when
	// Adaptive), Limit how many it may hold now.
	Concurrency int  `json:"concurrency"`
	Adaptive    bool `json:"adaptive"`
	Limit       int  `json:"limit"`
	// Saturation is the last saturation it reported (HeaderSaturation),
	// or the kernel measured for it (Options.WorkerDemand), -1 when none;
	// SaturationSource says which: "worker" or "kernel". BadReports counts
	// reports that could not be read.
	Saturation       float64 `json:"saturation"`
	SaturationSource string  `json:"saturationSource,omitempty"`
	BadReports       uint64  `json:"badReports"`
	// Lookahead is how many requests it may hold beyond Limit now
	// (Options.Lookahead, or 0 while its CPU is contended or its requests
	// take 100 ms or more: see slowAheadOff), Contention
	// the smoothed share of the time its main thread was runnable that it
	// waited for a CPU, -1 when not measured (see ContentionMeter).
	Lookahead   int       `json:"lookahead"`
	Contention  float64   `json:"contention"`
	Outstanding int       `json:"outstanding"`
	Served      uint64    `json:"served"`
	Failures    uint64    `json:"failures"`
	Draining    bool      `json:"draining"`
	Added       time.Time `json:"added"`
	// FramingBroken: the worker sent bytes outside a response (see
	// Stats.Unsolicited); none of its connections is reused.
	FramingBroken bool `json:"framingBroken"`
}

// Stats returns a snapshot of the endpoints and counters.
func (p *Proxy) Stats() Stats {
	st := Stats{
		WastedRenders:     p.wasted.Load(),
		NeverDispatched:   p.neverDispatched.Load(),
		BadGateway:        p.badGateway.Load(),
		GatewayTimeout:    p.gatewayTimeout.Load(),
		NoWorker:          p.noWorker.Load(),
		Retries:           p.retries.Load(),
		DialFailures:      p.dialFailures.Load(),
		Hung:              p.hung.Load(),
		Aborted:           p.aborted.Load(),
		Fallbacks:         p.fallbacks.Load(),
		BodyTooLarge:      p.tooLarge.Load(),
		BodyTimeout:       p.bodyTimeouts.Load(),
		BodyNoMemory:      p.bodyRefused.Load(),
		BufferedBytes:     p.mem.used.Load(),
		BufferedPeak:      p.mem.peak.Load(),
		BufferBudget:      p.mem.max,
		StreamedForMemory: p.streamedForMem.Load(),
		Unsolicited:       p.unsolicited.Load(),
		SlotWaits:         p.pool.slotWaits.Load(),
	}
	p.up.mu.Lock()
	st.Upgrades, st.UpgradesTotal, st.UpgradesRefused = len(p.up.open), p.up.total, p.up.refused
	p.up.mu.Unlock()
	st.MaxUpgrades = p.o.MaxUpgrades
	if p.o.Poison != nil {
		ps := p.o.Poison.Stats(time.Now())
		st.Poison = &ps
	}
	st.Streams, st.StreamsTotal = p.streams.open.Load(), p.streams.total.Load()
	st.StreamsRefused, st.StreamsCut = p.streams.refused.Load(), p.streams.cut.Load()
	st.MaxStreams = p.o.MaxStreams
	p.pool.mu.Lock()
	st.Slots = p.pool.slots
	st.Ahead = p.pool.aheads
	st.Outstanding = p.pool.retired
	st.Endpoints = make([]EndpointStats, 0, len(p.pool.eps))
	for _, e := range p.pool.eps {
		if e.routable {
			st.Outstanding += e.outstanding
		}
		st.Endpoints = append(st.Endpoints, EndpointStats{
			ID:               e.ID,
			Network:          e.Network,
			Addr:             e.Addr,
			Concurrency:      e.Concurrency,
			Adaptive:         e.Adaptive,
			Limit:            e.limit,
			Saturation:       e.lastSat,
			SaturationSource: e.satSource,
			Lookahead:        e.ahead,
			Contention:       e.contention,
			Outstanding:      e.outstanding,
			Draining:         e.draining,
			Added:            e.added,
			Served:           e.served.Load(),
			Failures:         e.failures.Load(),

			FramingBroken: e.client.Broken(),
		})
		if e.wl != nil {
			st.Endpoints[len(st.Endpoints)-1].BadReports = e.wl.BadReports()
		}
	}
	p.pool.mu.Unlock()
	return st
}
