package admission_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// An I/O-bound load (50 ms handlers at 400/s, 20 in flight) right after a
// CPU-bound phase, with the queue, CoDel and newest-first of sluice's
// defaults: the queue's sheds do not keep the limit low while the CPUs
// idle. The CPU-bound phase (2 in flight, 10 ms, 200/s, the CPUs 85%
// busy: not quite the bottleneck, so the delivery bound keeps its records)
// is fed to the Auto limit first; its records put the knee of the
// I/O-bound load at 2, and the Controller's windows (CPUs idle under
// synctest) must undo that within the first second.
func TestAutoAfterCPUPhaseServesIO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		a, err := limit.NewAuto(limit.AutoOptions{CPUs: 2})
		if err != nil {
			t.Fatal(err)
		}
		for range 100 { // 10 s of the CPU-bound phase
			time.Sleep(limit.AutoWindow)
			for range 20 {
				a.Observe(limit.Sample{Now: time.Now(), RTT: 10 * time.Millisecond, Inflight: 2})
			}
			a.Tick(limit.Window{Now: time.Now(), Inflight: 2, PeakInflight: 2, MeanInflight: 2, Queued: 5,
				CPUs: 2, CPUBusy: 1, Saturation: -1})
		}
		if l := a.Limit(); l != 2 {
			t.Fatalf("limit %d after the CPU-bound phase, want 2", l)
		}
		c := newController(t, 0, admission.Options{Limit: a, QueueSize: 100, QueueTimeout: 5 * time.Second,
			CoDelTarget: 5 * time.Millisecond, CoDelInterval: 100 * time.Millisecond, AdaptiveLIFO: true})
		res := simulate(t, c, 8*time.Second, 1, flowSpec{name: "io", rate: 400, service: 50 * time.Millisecond})["io"]
		t.Logf("success %.3f (%d/%d), shed %v, limit %d", res.successRatio(), res.served, res.offered, res.shed, c.Stats().Limit)
		if got := res.successRatio(); got < 0.95 {
			t.Errorf("I/O-bound success %.3f over 8 s (shed %v), want >= 0.95", got, res.shed)
		}
	})
}
