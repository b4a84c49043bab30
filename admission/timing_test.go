package admission_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// rtts is a limit.Algorithm with a limit of 1 that records the RTTs it is
// fed.
type rtts struct {
	mu  sync.Mutex
	got []time.Duration
}

func (r *rtts) Limit() int { return 1 }
func (r *rtts) Observe(s limit.Sample) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, s.RTT)
	return 1
}
func (r *rtts) Tick(limit.Window) int { return 1 }

func (r *rtts) samples() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.got...)
}

// Done times a Permit from its grant, whether it was granted at once or
// after queueing; an Untimed Request's Permit gives its slot back on Done
// with no sample, and counts in no service histogram.
func TestPermitTiming(t *testing.T) {
	for _, untimed := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			alg := &rtts{}
			c := newController(t, 1, admission.Options{Limit: alg, SampleWindow: -1, QueueSize: 1, QueueTimeout: time.Second})
			req := admission.Request{Untimed: untimed}
			ctx := context.Background()
			first, err := c.Acquire(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			queued := make(chan admission.Permit)
			go func() {
				p, err := c.Acquire(ctx, req)
				if err != nil {
					t.Error(err)
				}
				queued <- p
			}()
			synctest.Wait()
			time.Sleep(5 * time.Millisecond)
			first.Done() // held 5 ms
			second := <-queued
			time.Sleep(3 * time.Millisecond)
			second.Done() // waited 5 ms, held 3 ms
			if got := c.Stats().Inflight; got != 0 {
				t.Fatalf("untimed %v: %d in flight after both Done, want 0", untimed, got)
			}
			hs := c.Histograms()
			h := hs.Service(admission.Critical, admission.ServiceDone)
			got := alg.samples()
			if untimed {
				if len(got) != 0 || h.Count() != 0 {
					t.Errorf("untimed: algorithm fed %v, %d service observations, want none", got, h.Count())
				}
				return
			}
			if len(got) != 2 || got[0] != 5*time.Millisecond || got[1] != 3*time.Millisecond {
				t.Errorf("algorithm fed %v, want [5ms 3ms]: each from its grant", got)
			}
			if h.Count() != 2 || h.Sum != 8*time.Millisecond {
				t.Errorf("service histogram: %d observations summing %v, want 2 summing 8ms", h.Count(), h.Sum)
			}
			if w := hs.QueueWait(admission.Critical, admission.WaitAdmitted); w.Count() != 2 || w.Sum != 5*time.Millisecond {
				t.Errorf("wait histogram: %d observations summing %v, want 2 summing 5ms", w.Count(), w.Sum)
			}
		})
	}
}
