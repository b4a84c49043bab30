package proxy_test

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/limit"
)

// recorder is a limit algorithm that keeps every sample it is given.
type recorder struct {
	mu      sync.Mutex
	samples []limit.Sample
}

func (r *recorder) Limit() int { return 1 }
func (r *recorder) Observe(s limit.Sample) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.samples = append(r.samples, s)
	return 1
}
func (r *recorder) Tick(limit.Window) int { return 1 }

// The limit algorithm learns the time a slot was held, and that a 504 was
// an overload drop.
func TestPermitSamples(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		rec := &recorder{}
		g := newRig(t, proxy.Options{Timeout: time.Second}, admission.Options{Limit: rec})
		w, _ := g.worker(1)

		g.get("/fast").result()
		a := g.get("/block/a")
		time.Sleep(3 * time.Second) // 504 at 1 s; the render goes on
		w.open("a")
		a.result()
		synctest.Wait()

		rec.mu.Lock()
		defer rec.mu.Unlock()
		if len(rec.samples) != 2 {
			t.Fatalf("got %d samples, want 2", len(rec.samples))
		}
		if s := rec.samples[0]; s.Dropped || s.RTT != 0 {
			t.Errorf("fast request: got dropped %v, RTT %v; want false, 0", s.Dropped, s.RTT)
		}
		if s := rec.samples[1]; !s.Dropped || s.RTT != 3*time.Second {
			t.Errorf("timed-out request: got dropped %v, RTT %v; want true, 3s (until the worker answered)", s.Dropped, s.RTT)
		}
	})
}
