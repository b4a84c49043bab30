// Package wire maps a validated config.Config onto the components' options.
// It holds no behaviour of its own: every rule lives in the package it
// configures. The sluice binary and the evaluation suite's library-face
// server both build their admission options here, so that the two cannot
// drift apart.
package wire

import (
	"log/slog"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/limit"
)

// FrontMode reports whether cfg fronts workers or upstreams (else sluice
// serves the embedded demo app in-process, as a Go service would).
func FrontMode(cfg *config.Config) bool { return cfg.FrontMode() }

// ControllerOptions builds the admission Controller's options. In front
// mode the algorithm is only a fixed cap, server.maxConcurrentRequests (or
// none): the proxy sets the Controller's ceiling to the sum of its workers'
// limits, and sig is not used. In library mode it is the configured
// backpressure algorithm over the process's own saturation signal sig.
func ControllerOptions(cfg *config.Config, sig limit.Signal, log *slog.Logger) (admission.Options, error) {
	s, bp := cfg.Server, cfg.Server.Backpressure
	o := admission.Options{
		QueueSize:          bp.QueueSize,
		QueueTimeout:       bp.QueueTimeout,
		MaxSaturation:      bp.SaturationMax,
		SampleWindow:       bp.SampleWindow,
		SmoothingFactor:    bp.SmoothingFactor,
		Logger:             log,
		MinShare:           cfg.Overload.PriorityMinShare,
		MaxQueuedPerTenant: cfg.Tenants.MaxQueuedPerTenant,
		MaxTrackedTenants:  cfg.Tenants.MaxTracked,
		AdaptiveLIFO:       cfg.Overload.AdaptiveLIFO,
	}
	if o.QueueSize == 0 {
		o.QueueSize = -1 // the file's 0 is "no queue"
	}
	if o.QueueTimeout == 0 {
		o.QueueTimeout = -1 // the file's 0 is "no timeout"
	}
	if cfg.Overload.CoDel.Enabled {
		o.CoDelTarget, o.CoDelInterval = cfg.Overload.CoDel.Target, cfg.Overload.CoDel.Interval
	}
	if w := cfg.Tenants.Weights; len(w) > 0 {
		o.TenantWeight = func(t string) float64 { return w[t] }
	}
	if FrontMode(cfg) {
		// A hard ceiling on requests in flight across all workers; each
		// worker's own limit is the proxy's business.
		n := s.MaxConcurrentRequests
		if n <= 0 {
			n = admission.MaxLimit
		}
		o.Limit = limit.NewFixed(n)
		if !bp.Enabled {
			o.QueueSize = -1
		}
		return o, nil
	}
	ceiling := bp.MaxLimit
	if s.MaxConcurrentRequests > 0 && s.MaxConcurrentRequests < ceiling {
		ceiling = s.MaxConcurrentRequests
	}
	if !bp.Enabled {
		// Only the static limit, and excess shed at once, as the seed's
		// maxConcurrentRequests alone; with none, no limit at all.
		n := s.MaxConcurrentRequests
		if n <= 0 {
			n = admission.MaxLimit
		}
		o.Limit, o.QueueSize = limit.NewFixed(n), -1
		return o, nil
	}
	o.Signal = sig
	initial := min(bp.StartLimit(), ceiling)
	switch bp.Algorithm {
	case config.AlgorithmFixed:
		o.Limit = limit.NewFixed(initial)
	case config.AlgorithmGradient:
		// The gradient measures its way to the knee; starting wide open
		// (the seed's default for AIMD) would only make it walk down.
		if bp.InitialLimit == 0 {
			initial = min(100, ceiling)
		}
		g, err := limit.NewGradient(limit.GradientOptions{Initial: initial, Min: min(bp.MinLimit, ceiling), Max: ceiling})
		if err != nil {
			return o, err
		}
		o.Limit = g
	case config.AlgorithmAIMD:
		a, err := limit.NewAIMD(limit.AIMDOptions{Initial: initial, Min: min(bp.MinLimit, ceiling), Max: ceiling, MaxSaturation: bp.SaturationMax})
		if err != nil {
			return o, err
		}
		o.Limit = a
	default: // config.AlgorithmAuto
		// Auto starts at its floor (the usable CPUs, or minLimit if higher)
		// unless initialLimit says otherwise, and decides every 100 ms at
		// most: it must cut within a fraction of a second of CPU-bound
		// handlers oversubscribing the CPUs.
		a, err := limit.NewAuto(limit.AutoOptions{Initial: min(bp.InitialLimit, ceiling), Min: min(bp.MinLimit, ceiling), Max: ceiling})
		if err != nil {
			return o, err
		}
		o.Limit = a
		o.SampleWindow = min(o.SampleWindow, limit.AutoWindow)
		// And its own signal, as admission.New's default: the CPUs
		// oversubscribed by this process's work, which other processes'
		// load (a scheduling latency of the whole machine) does not raise.
		o.Signal = a
	}
	return o, nil
}
