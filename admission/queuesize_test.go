package admission_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// queueBurst holds every one of 50 slots of a Controller whose requests
// took 50 ms, then queues 300 more: six times the slots, 300 ms of their
// service, under the sojourn CoDel lets stand at or below capacity. It
// returns the bound Stats showed and the requests shed as queue-full.
func queueBurst(t *testing.T, size int) (bound int, full uint64) {
	t.Helper()
	const slots, service = 50, 50 * time.Millisecond
	c := newController(t, slots, admission.Options{QueueSize: size, QueueTimeout: -1})
	if got := c.Stats().QueueBound; got != max(size, 100) {
		t.Errorf("QueueSize %d, before any request: got bound %d, want %d", size, got, max(size, 100))
	}
	p := mustAcquire(t, c)
	time.Sleep(service)
	p.DoneSample(limit.Sample{Now: time.Now(), RTT: service})

	held := make([]admission.Permit, slots)
	for i := range held {
		held[i] = mustAcquire(t, c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan result, 300)
	for i := range 300 {
		enqueue(ctx, c, i, admission.Request{}, out)
	}
	st := c.Stats()
	cancel()
	for range 300 {
		if r := <-out; r.err == nil {
			r.p.Release()
		}
	}
	for _, p := range held {
		p.Release()
	}
	return st.QueueBound, st.Shed[admission.ReasonQueueFull]
}

// A queue sized to the service (QueueSize zero) holds what its slots
// serve in half a second: 50 slots of 50 ms hold 500, and a burst of
// 300 waits rather than losing 200 to a count of 100 that would have
// been served within 300 ms. A fixed size stays fixed.
func TestQueueSizedToTheService(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		bound, full := queueBurst(t, 0)
		if bound != 500 || full != 0 {
			t.Errorf("sized to the service: got bound %d and %d shed queue-full, want 500 and none", bound, full)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		bound, full := queueBurst(t, 100)
		if bound != 100 || full != 200 {
			t.Errorf("QueueSize 100: got bound %d and %d shed queue-full, want 100 and 200", bound, full)
		}
	})
}

// While a tolerance is in force the wait is bounded by time alone: an
// auto-sized queue takes up to its cap, since the limit it is sized by is
// far below what will serve it once the dip or the ramp has passed. A
// fixed size stays fixed.
func TestQueueSizedForATolerance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		auto := newController(t, 2, admission.Options{CoDelTarget: 5 * time.Millisecond})
		fixed := newController(t, 2, admission.Options{QueueSize: 50, CoDelTarget: 5 * time.Millisecond})
		for _, c := range []*admission.Controller{auto, fixed} {
			c.Tolerate(time.Now().Add(time.Second), 500*time.Millisecond)
		}
		if got := auto.Stats().QueueBound; got != 4096 {
			t.Errorf("auto size, tolerating: got bound %d, want the cap 4096", got)
		}
		if got := fixed.Stats().QueueBound; got != 50 {
			t.Errorf("QueueSize 50, tolerating: got bound %d, want 50", got)
		}
		time.Sleep(2 * time.Second)
		if got := auto.Stats().QueueBound; got != 100 {
			t.Errorf("auto size, the tolerance over: got bound %d, want 100 (no service time yet)", got)
		}
	})
}
