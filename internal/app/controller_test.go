package app

import (
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/limit"
)

func parse(t *testing.T, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse("test", []byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func TestControllerOptionsLimits(t *testing.T) {
	auto, err := limit.NewAuto(limit.AutoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	autoStart := auto.Limit()
	tests := []struct {
		name      string
		yaml      string
		wantLimit int
		wantQueue int
	}{
		{"aimd starts wide open under maxConcurrentRequests", "server: {maxConcurrentRequests: 100, backpressure: {algorithm: aimd}}", 100, 0},
		{"aimd without a static ceiling starts at maxLimit", "server: {maxConcurrentRequests: 0, backpressure: {algorithm: aimd, maxLimit: 500}}", 500, 0},
		{"gradient starts at 100, not maxLimit", "server: {maxConcurrentRequests: 0, backpressure: {algorithm: gradient}}", 100, 0},
		{"gradient under a lower ceiling starts at the ceiling", "server: {maxConcurrentRequests: 40, backpressure: {algorithm: gradient}}", 40, 0},
		{"fixed at initialLimit", "server: {backpressure: {algorithm: fixed, initialLimit: 7}}", 7, 0},
		{"fixed never above the ceiling", "server: {maxConcurrentRequests: 20, backpressure: {algorithm: fixed, initialLimit: 50}}", 20, 0},
		{"backpressure off: the static limit, no queue", "server: {maxConcurrentRequests: 20, backpressure: {enabled: false}}", 20, -1},
		{"backpressure off and no static limit: no limit", "server: {maxConcurrentRequests: 0, backpressure: {enabled: false}}", admission.MaxLimit, -1},
		{"queueSize 0 in the file is no queue", "server: {backpressure: {algorithm: aimd, queueSize: 0}}", 100, -1},
		{"a number in the file is a fixed queue", "server: {backpressure: {algorithm: aimd, queueSize: 250}}", 100, 250},
		{"auto (the default) starts at the usable CPUs", "server: {}", autoStart, 0},
		{"auto at initialLimit", "server: {backpressure: {initialLimit: 50}}", max(50, autoStart), 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := ControllerOptions(parse(t, tt.yaml), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := o.Limit.Limit(); got != tt.wantLimit {
				t.Errorf("got initial limit %d, want %d", got, tt.wantLimit)
			}
			if o.QueueSize != tt.wantQueue {
				t.Errorf("got queue size %d, want %d", o.QueueSize, tt.wantQueue)
			}
		})
	}
}

func TestControllerOptionsAlgorithms(t *testing.T) {
	sig := limit.SignalFunc(func() float64 { return 0 })
	for _, tt := range []struct {
		algorithm string
		check     func(limit.Algorithm) bool
	}{
		{config.AlgorithmAIMD, func(l limit.Algorithm) bool { _, ok := l.(*limit.AIMD); return ok }},
		{config.AlgorithmGradient, func(l limit.Algorithm) bool { _, ok := l.(*limit.Gradient); return ok }},
		{config.AlgorithmFixed, func(l limit.Algorithm) bool { _, ok := l.(*limit.Fixed); return ok }},
		{config.AlgorithmAuto, func(l limit.Algorithm) bool { _, ok := l.(*limit.Auto); return ok }},
	} {
		t.Run(tt.algorithm, func(t *testing.T) {
			o, err := ControllerOptions(parse(t, "server: {backpressure: {algorithm: "+tt.algorithm+"}}"), sig, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o.Limit) {
				t.Errorf("got limit %T for %s", o.Limit, tt.algorithm)
			}
			switch {
			case tt.algorithm == config.AlgorithmAuto && any(o.Signal) != any(o.Limit):
				// As admission.New's default: Auto's own oversubscription.
				t.Errorf("auto: got signal %T, want the Auto limit itself", o.Signal)
			case o.Signal == nil:
				t.Error("library mode: got no saturation signal, want the one passed")
			}
		})
	}
}

func TestControllerOptionsFrontMode(t *testing.T) {
	const (
		up = "upstreams: {servers: [127.0.0.1:8080]}\n"
		wk = "workers: {command: [node, worker.js]}\n"
	)
	for _, tt := range []struct {
		name      string
		yaml      string
		wantLimit int
		wantQueue int
	}{
		{"upstreams: the default cap on requests in flight", up, 100, 0},
		{"workers: the default cap on requests in flight", wk, 100, 0},
		{"maxConcurrentRequests is the cap", wk + "server: {maxConcurrentRequests: 7}", 7, 0},
		{"no maxConcurrentRequests: no cap but the workers'", wk + "server: {maxConcurrentRequests: 0}", admission.MaxLimit, 0},
		{"the backpressure algorithm is not the front's", wk + "server: {maxConcurrentRequests: 0, backpressure: {algorithm: fixed, initialLimit: 3, maxLimit: 5}}", admission.MaxLimit, 0},
		{"backpressure off: no queue", up + "server: {backpressure: {enabled: false}}", 100, -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := parse(t, tt.yaml)
			if !cfg.FrontMode() {
				t.Fatal("FrontMode: got false, want true")
			}
			o, err := ControllerOptions(cfg, limit.SignalFunc(func() float64 { return 0 }), nil)
			if err != nil {
				t.Fatal(err)
			}
			f, ok := o.Limit.(*limit.Fixed)
			if !ok {
				t.Fatalf("got limit %T, want a *limit.Fixed cap", o.Limit)
			}
			if got := f.Limit(); got != tt.wantLimit {
				t.Errorf("got cap %d, want %d", got, tt.wantLimit)
			}
			if o.Signal != nil {
				t.Error("front mode: got a saturation signal, want none (the workers are not this process)")
			}
			if o.QueueSize != tt.wantQueue {
				t.Errorf("got queue size %d, want %d", o.QueueSize, tt.wantQueue)
			}
		})
	}
	if config.Default().FrontMode() {
		t.Error("FrontMode of the defaults: got true, want library mode")
	}
}

func TestControllerOptionsMapsTheFile(t *testing.T) {
	cfg := parse(t, `server:
  backpressure: {algorithm: aimd, queueSize: 30, queueTimeout: 0, saturationMax: 0.9, sampleWindow: 2s, smoothingFactor: 0.5}
overload:
  priorityMinShare: 0.1
  adaptiveLifo: false
  codel: {enabled: true, target: 7ms, interval: 70ms}
tenants:
  key: header:X-Tenant
  maxQueuedPerTenant: 12
  weights: {acme: 2.5}
`)
	o, err := ControllerOptions(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.QueueSize != 30 || o.QueueTimeout != -1 {
		t.Errorf("got queue %d / %v, want 30 / -1 (the file's 0 is no timeout)", o.QueueSize, o.QueueTimeout)
	}
	if o.MaxSaturation != 0.9 || o.SampleWindow != 2*time.Second || o.SmoothingFactor != 0.5 || o.MinShare != 0.1 {
		t.Errorf("got saturation %v window %v smoothing %v share %v", o.MaxSaturation, o.SampleWindow, o.SmoothingFactor, o.MinShare)
	}
	if o.AdaptiveLIFO || o.MaxQueuedPerTenant != 12 {
		t.Errorf("got adaptive LIFO %v, max queued per tenant %d, want false (as the file says), 12", o.AdaptiveLIFO, o.MaxQueuedPerTenant)
	}
	if o.CoDelTarget != 7*time.Millisecond || o.CoDelInterval != 70*time.Millisecond {
		t.Errorf("got CoDel %v / %v, want 7ms / 70ms", o.CoDelTarget, o.CoDelInterval)
	}
	var l live
	l.controllerOptions(cfg, &o)
	if got := o.TenantWeight("acme"); got != 2.5 {
		t.Errorf("weight of acme: got %v, want 2.5", got)
	}
	if got := o.TenantWeight("other"); got != 0 {
		t.Errorf("weight of an unlisted tenant: got %v, want 0 (the controller's default)", got)
	}

	// By default a standing queue is served newest first: under overload
	// the served then wait little, where first in, first out would serve
	// each one at CoDel's threshold (admission's TestAdaptiveLIFOUnderOverload).
	if o, err = ControllerOptions(config.Default(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if !o.AdaptiveLIFO || o.CoDelTarget == 0 {
		t.Errorf("defaults: got adaptive LIFO %v with CoDel target %v, want LIFO on over CoDel", o.AdaptiveLIFO, o.CoDelTarget)
	}

	off := parse(t, "overload: {codel: {enabled: false}}")
	if o, err = ControllerOptions(off, nil, nil); err != nil {
		t.Fatal(err)
	}
	if o.CoDelTarget != 0 || o.CoDelInterval != 0 {
		t.Errorf("CoDel off: got CoDel %v / %v, want none", o.CoDelTarget, o.CoDelInterval)
	}
}

// tenants.maxTracked reaches the Controller: the queue's memory of tenants
// is bounded by it.
func TestControllerOptionsMaxTracked(t *testing.T) {
	cfg := parse(t, "tenants:\n  maxTracked: 123\n")
	o, err := ControllerOptions(cfg, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.MaxTrackedTenants != 123 {
		t.Errorf("got MaxTrackedTenants %d, want 123", o.MaxTrackedTenants)
	}
}
