package app

import (
	"log/slog"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/limit"
)

// This file and mapping.go map a validated configuration onto the
// components' options. They hold no behaviour of their own: every rule
// lives in the package it configures.

// ControllerOptions builds the admission Controller's options. In front
// mode the algorithm is only a fixed cap, server.maxConcurrentRequests (or
// none): the proxy sets the Controller's ceiling to the sum of its workers'
// limits, and sig is not used. In library mode it is the configured
// backpressure algorithm over the process's own saturation signal sig.
//
// TenantWeight is left nil: tenants.weights change on reload, so the App
// gives the Controller a TenantWeight that reads them where a reload
// stores them (live.controllerOptions).
func ControllerOptions(cfg *config.Config, sig limit.Signal, log *slog.Logger) (admission.Options, error) {
	o := queueOptions(cfg, log)
	s, bp := cfg.Server, cfg.Server.Backpressure
	if cfg.FrontMode() {
		// A hard ceiling on requests in flight across all workers; each
		// worker's own limit is the proxy's business.
		o.Limit = limit.NewFixed(maxInFlight(s.MaxConcurrentRequests))
		if !bp.Enabled {
			o.QueueSize = -1
		}
		return o, nil
	}
	if !bp.Enabled {
		// Only the static limit, with the excess shed at once rather than
		// queued: a plain cap; with none, no limit at all.
		o.Limit, o.QueueSize = limit.NewFixed(maxInFlight(s.MaxConcurrentRequests)), -1
		return o, nil
	}
	o.Signal = sig
	return o, libraryLimit(cfg, &o)
}

// queueOptions maps what both modes share: the queue, CoDel, priorities
// and tenants.
func queueOptions(cfg *config.Config, log *slog.Logger) admission.Options {
	bp := cfg.Server.Backpressure
	o := admission.Options{
		QueueSize:          queueSize(bp.QueueSize),
		QueueTimeout:       none(bp.QueueTimeout),
		MaxSaturation:      bp.SaturationMax,
		SampleWindow:       bp.SampleWindow,
		SmoothingFactor:    bp.SmoothingFactor,
		Logger:             log,
		MinShare:           cfg.Overload.PriorityMinShare,
		MaxQueuedPerTenant: cfg.Tenants.MaxQueuedPerTenant,
		MaxTrackedTenants:  cfg.Tenants.MaxTracked,
		AdaptiveLIFO:       cfg.Overload.AdaptiveLIFO,
	}
	if cfg.Overload.CoDel.Enabled {
		o.CoDelTarget, o.CoDelInterval = cfg.Overload.CoDel.Target, cfg.Overload.CoDel.Interval
	}
	return o
}

// queueSize is server.backpressure.queueSize as the Controller's: its
// auto is the Controller's zero, its 0 (no queue) a negative size.
func queueSize(q config.QueueSize) int {
	if q == config.QueueSizeAuto {
		return 0
	}
	return int(none(q))
}

// maxInFlight is server.maxConcurrentRequests as a limit: its "none" is
// the most a Controller can enforce.
func maxInFlight(n int) int {
	if none(n) < 0 {
		return admission.MaxLimit
	}
	return n
}

// libraryLimit sets o's limit to the configured backpressure algorithm,
// under the ceiling of backpressure.maxLimit and maxConcurrentRequests.
func libraryLimit(cfg *config.Config, o *admission.Options) error {
	s, bp := cfg.Server, cfg.Server.Backpressure
	ceiling := min(bp.MaxLimit, maxInFlight(s.MaxConcurrentRequests))
	initial, floor := min(bp.StartLimit(), ceiling), min(bp.MinLimit, ceiling)
	var err error
	switch bp.Algorithm {
	case config.AlgorithmFixed:
		o.Limit = limit.NewFixed(initial)
	case config.AlgorithmGradient:
		// The gradient measures its way to the knee; starting wide open,
		// as AIMD does, would only make it walk down.
		if bp.InitialLimit == 0 {
			initial = min(100, ceiling)
		}
		o.Limit, err = limit.NewGradient(limit.GradientOptions{Initial: initial, Min: floor, Max: ceiling})
	case config.AlgorithmAIMD:
		o.Limit, err = limit.NewAIMD(limit.AIMDOptions{Initial: initial, Min: floor, Max: ceiling, MaxSaturation: bp.SaturationMax})
	default: // config.AlgorithmAuto
		// Auto starts at its floor (the usable CPUs, or minLimit if higher)
		// unless initialLimit says otherwise, and decides every 100 ms at
		// most: it must cut within a fraction of a second of CPU-bound
		// handlers oversubscribing the CPUs.
		var a *limit.Auto
		if a, err = limit.NewAuto(limit.AutoOptions{Initial: min(bp.InitialLimit, ceiling), Min: floor, Max: ceiling}); err != nil {
			return err
		}
		o.Limit = a
		o.SampleWindow = min(o.SampleWindow, limit.AutoWindow)
		// And its own signal, as admission.New's default: the CPUs
		// oversubscribed by this process's work, which other processes'
		// load (a scheduling latency of the whole machine) does not raise.
		o.Signal = a
	}
	return err
}
