package eval

import (
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/limit"
)

func TestLibAdmissionOptionsAreTheDefaults(t *testing.T) {
	o, err := LibAdmissionOptions("", 0, limit.SignalFunc(func() float64 { return 0 }), nil)
	if err != nil {
		t.Fatal(err)
	}
	def := config.Default()
	bp := def.Server.Backpressure
	// The default size, auto, is the Controller's zero.
	if bp.QueueSize != config.QueueSizeAuto || o.QueueSize != 0 || o.QueueTimeout != bp.QueueTimeout {
		t.Errorf("got queue %d / %v, want the defaults (auto: 0) / %v", o.QueueSize, o.QueueTimeout, bp.QueueTimeout)
	}
	if o.CoDelTarget != def.Overload.CoDel.Target || o.CoDelInterval != def.Overload.CoDel.Interval {
		t.Errorf("got CoDel %v / %v, want %v / %v", o.CoDelTarget, o.CoDelInterval, def.Overload.CoDel.Target, def.Overload.CoDel.Interval)
	}
	// Auto decides every 100 ms, at most the configured window.
	if o.MaxSaturation != bp.SaturationMax || o.SampleWindow != min(bp.SampleWindow, limit.AutoWindow) || o.MinShare != def.Overload.PriorityMinShare {
		t.Errorf("got saturation %v window %v share %v, want the defaults", o.MaxSaturation, o.SampleWindow, o.MinShare)
	}
	if any(o.Signal) != any(o.Limit) {
		t.Errorf("got saturation signal %T, want the Auto limit's own", o.Signal)
	}
	// The Auto limit starts at its floor, the usable CPUs.
	if _, ok := o.Limit.(*limit.Auto); !ok {
		t.Fatalf("got limit %T, want *limit.Auto", o.Limit)
	}
	want, err := limit.NewAuto(limit.AutoOptions{Max: min(bp.MaxLimit, def.Server.MaxConcurrentRequests)})
	if err != nil {
		t.Fatal(err)
	}
	if got := o.Limit.Limit(); got != want.Limit() {
		t.Errorf("got initial limit %d, want %d", got, want.Limit())
	}
}

func TestLibAdmissionOptionsGradient(t *testing.T) {
	o, err := LibAdmissionOptions(config.AlgorithmGradient, 0, limit.SignalFunc(func() float64 { return 0 }), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Limit.(*limit.Gradient); !ok {
		t.Fatalf("got limit %T, want *limit.Gradient", o.Limit)
	}
	// Everything else is the defaults, as with aimd.
	def := config.Default()
	if o.QueueSize != 0 || o.CoDelTarget != def.Overload.CoDel.Target || o.Signal == nil { // queue: auto
		t.Errorf("got queue %d, CoDel %v, signal %v, want the defaults and the signal passed", o.QueueSize, o.CoDelTarget, o.Signal != nil)
	}
	if _, err := LibAdmissionOptions("vegas", 0, nil, nil); err == nil {
		t.Error("an unknown algorithm: got nil error")
	}
}

// lib-sluice-fixed: a fixed limit of GOMAXPROCS, the README's advice for
// CPU-bound handlers; everything else the defaults.
func TestLibAdmissionOptionsFixed(t *testing.T) {
	o, err := LibAdmissionOptions(config.AlgorithmFixed, LibProcs, limit.SignalFunc(func() float64 { return 0 }), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := o.Limit.(*limit.Fixed); !ok || o.Limit.Limit() != LibProcs {
		t.Fatalf("got limit %T at %d, want *limit.Fixed at %d", o.Limit, o.Limit.Limit(), LibProcs)
	}
	if def := config.Default(); o.QueueSize != 0 || o.CoDelTarget != def.Overload.CoDel.Target { // queue: auto
		t.Errorf("got queue %d, CoDel %v, want the defaults", o.QueueSize, o.CoDelTarget)
	}
	if _, err := LibAdmissionOptions("", -1, nil, nil); err == nil {
		t.Error("a negative initial limit: got nil error")
	}
}

func TestServeLibStopsWithItsContext(t *testing.T) {
	for _, tt := range []struct {
		withAdmission bool
		algorithm     string
		initialLimit  int
	}{{false, "", 0}, {true, "", 0}, {true, config.AlgorithmGradient, 0}, {true, config.AlgorithmFixed, LibProcs}} {
		ln, err := ListenLoopback("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- ServeLib(ctx, ln, 1000, tt.withAdmission, tt.algorithm, tt.initialLimit, nil) }()
		url := "http://" + ln.Addr().String()
		if err := WaitHTTP(ctx, url+demo.ReadyPath); err != nil {
			t.Fatal(err)
		}
		status, err := get(ctx, newClient(5*time.Second), url+"/?cpu=1", io.Discard)
		if err != nil || status != http.StatusOK {
			t.Errorf("admission %v %q: got %d, %v, want 200", tt.withAdmission, tt.algorithm, status, err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("admission %v %q: got %v, want a clean stop", tt.withAdmission, tt.algorithm, err)
		}
	}
}

func TestListenLoopbackRefusesOtherAddresses(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", ":0", "example.com:80", "nonsense"} {
		if ln, err := ListenLoopback(addr); err == nil {
			ln.Close()
			t.Errorf("%s: got a listener, want an error", addr)
		}
	}
}
