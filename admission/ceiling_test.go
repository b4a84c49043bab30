package admission_test

import (
	"encoding/json"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// recorder is an algorithm with a settable limit that records samples.
type recorder struct {
	limit   int
	samples []limit.Sample
}

func (r *recorder) Limit() int                 { return r.limit }
func (r *recorder) Observe(s limit.Sample) int { r.samples = append(r.samples, s); return r.limit }
func (r *recorder) Tick(limit.Window) int      { return r.limit }

func TestCeilingBoundsTheAlgorithm(t *testing.T) {
	tests := []struct {
		name         string
		alg, ceiling int
		want         int
	}{
		{"ceiling below the algorithm", 10, 4, 4},
		{"algorithm below the ceiling", 3, 8, 3},
		{"ceiling of zero counts as one", 5, 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newController(t, 0, admission.Options{Limit: &recorder{limit: tt.alg}, SampleWindow: -1})
			c.SetCeiling(tt.ceiling)
			if got := c.Stats().Limit; got != tt.want {
				t.Fatalf("got limit %d, want %d", got, tt.want)
			}
		})
	}
}

func TestAlgorithmDecisionIsBoundedByTheCeiling(t *testing.T) {
	alg := &recorder{limit: 2}
	c := newController(t, 0, admission.Options{Limit: alg, SampleWindow: -1})
	c.SetCeiling(5)
	alg.limit = 50 // the algorithm's next decision asks for more than the ceiling
	p := mustAcquire(t, c)
	p.Done()
	if got := c.Stats().Limit; got != 5 {
		t.Fatalf("got limit %d after the algorithm rose to 50, want the ceiling 5", got)
	}
	alg.limit = 3
	p = mustAcquire(t, c)
	p.Done()
	if got := c.Stats().Limit; got != 3 {
		t.Fatalf("got limit %d after the algorithm fell to 3, want 3", got)
	}
}

func TestPermitDoneMeasuresTheSlotHeld(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		alg := &recorder{limit: 4}
		c := newController(t, 0, admission.Options{Limit: alg, SampleWindow: -1})
		p := mustAcquire(t, c)
		time.Sleep(30 * time.Millisecond) // synctest's fake clock: the work takes 30 ms
		p.Done()
		if len(alg.samples) != 1 {
			t.Fatalf("got %d samples, want 1", len(alg.samples))
		}
		if s := alg.samples[0]; s.RTT != 30*time.Millisecond || s.Inflight != 1 || s.Dropped {
			t.Fatalf("got sample %+v, want RTT 30ms, in flight 1, not dropped", s)
		}
		if st := c.Stats(); st.Inflight != 0 {
			t.Fatalf("got %d in flight after Done, want 0", st.Inflight)
		}
	})
}

func TestReleasingMoreThanHeldPanics(t *testing.T) {
	c := newController(t, 4, admission.Options{})
	p := mustAcquire(t, c)
	p.Release()
	defer func() {
		if r := recover(); r != "admission: released more than held" {
			t.Fatalf("got panic %v, want \"admission: released more than held\"", r)
		}
		if st := c.Stats(); st.Limit != 4 || st.Inflight != 0 {
			t.Fatalf("after the bad release: got limit %d in flight %d, want 4 and 0 (state undone)", st.Limit, st.Inflight)
		}
	}()
	p.Release()
}

func TestCostIsClampedToMaxCost(t *testing.T) {
	c := newController(t, 8, admission.Options{QueueSize: -1})
	p, err := c.Acquire(t.Context(), admission.Request{Cost: 1 << 40})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Stats()
	if st.Inflight != admission.MaxCost || st.Limit != 8 {
		t.Fatalf("got in flight %d limit %d, want %d and 8 (a request dearer than the limit runs alone, its cost clamped)", st.Inflight, st.Limit, admission.MaxCost)
	}
	if _, err := c.Acquire(t.Context(), admission.Request{}); err == nil {
		t.Fatal("a request was admitted beside one dearer than the whole limit")
	} else if r, _ := admission.ShedReason(err); r != admission.ReasonLimit {
		t.Fatalf("got %v, want shed for the limit", err)
	}
	p.Release()
	if st := c.Stats(); st.Inflight != 0 || st.Limit != 8 {
		t.Fatalf("after release: got in flight %d limit %d, want 0 and 8", st.Inflight, st.Limit)
	}
}

func TestShedCountsJSON(t *testing.T) {
	var s admission.ShedCounts
	s[admission.ReasonCoDel] = 5
	s[admission.ReasonQueueFull] = 2
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]uint64
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	if m["codel"] != 5 || m["queue-full"] != 2 || m["tenant"] != 0 || len(m) != len(admission.Reasons()) {
		t.Fatalf("got %s, want every reason keyed by name", b)
	}
	var back admission.ShedCounts
	if err := json.Unmarshal(b, &back); err != nil || back != s {
		t.Fatalf("round trip: got %v, %v; want %v", back, err, s)
	}
	if s.Total() != 7 {
		t.Fatalf("got total %d, want 7", s.Total())
	}
	if err := json.Unmarshal([]byte(`{"made-up":1}`), &back); err == nil {
		t.Fatal("an unknown reason decoded without error")
	}
}
