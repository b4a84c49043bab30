package admission

import (
	"strconv"
	"testing"
	"time"
)

// A flood of distinct tenant keys cannot grow the queue's tenant table:
// flows exist only while they have queued requests.
func TestFairQueueTenantTableBounded(t *testing.T) {
	const size = 100
	q := newFairQueue(size, 0, 0.05, nil)
	var queued []*waiter
	peak := 0
	for i := range 1_000_000 {
		w := &waiter{req: Request{Tenant: "t" + strconv.Itoa(i), Priority: Priority(i%4 - 2)}, cost: 1}
		victim, _, refused := q.push(w)
		if refused == ReasonNone {
			queued = append(queued, w)
		}
		if victim != nil {
			for j, x := range queued {
				if x == victim {
					queued = append(queued[:j], queued[j+1:]...)
					break
				}
			}
		}
		if i%3 == 0 && len(queued) > 0 { // some leave: served or given up
			if i%2 == 0 {
				q.dispatched(queued[0])
			} else {
				q.remove(queued[0])
			}
			queued = queued[1:]
		}
		peak = max(peak, q.tenants())
		if q.len() != len(queued) {
			t.Fatalf("after %d keys: queue says %d queued, test holds %d", i, q.len(), len(queued))
		}
	}
	if peak > size {
		t.Fatalf("tenant table peaked at %d entries for a queue of %d", peak, size)
	}
	for _, w := range queued {
		q.remove(w)
	}
	if n := q.tenants(); n != 0 {
		t.Fatalf("got %d tenants tracked after the queue emptied, want 0", n)
	}
}

func TestCoDelDecisions(t *testing.T) {
	const target, interval = 5 * time.Millisecond, 100 * time.Millisecond
	t0 := time.Unix(0, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type step struct {
		at      int // ms
		sojourn time.Duration
		empty   bool // the queue drained before this step
		drop    bool
		floor   time.Duration
		lone    bool // the request is the only one queued
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"below target never drops", []step{{0, 4 * time.Millisecond, false, false, 0, false}, {200, 4 * time.Millisecond, false, false, 0, false}}},
		{"above target for less than an interval", []step{{0, 10 * time.Millisecond, false, false, 0, false}, {99, 50 * time.Millisecond, false, false, 0, false}}},
		{"a dip under target restarts the interval", []step{{0, 10 * time.Millisecond, false, false, 0, false}, {50, 1 * time.Millisecond, false, false, 0, false}, {120, 10 * time.Millisecond, false, false, 0, false}, {200, 10 * time.Millisecond, false, false, 0, false}}},
		{"standing for an interval drops", []step{{0, 10 * time.Millisecond, false, false, 0, false}, {100, 10 * time.Millisecond, false, true, 0, false}, {101, 6 * time.Millisecond, false, true, 0, false}}},
		{"while dropping, young requests are served", []step{{0, 10 * time.Millisecond, false, false, 0, false}, {100, 10 * time.Millisecond, false, true, 0, false}, {101, 2 * time.Millisecond, false, false, 0, false}, {102, 7 * time.Millisecond, false, true, 0, false}}},
		{"an empty queue ends dropping", []step{{0, 10 * time.Millisecond, false, false, 0, false}, {100, 10 * time.Millisecond, false, true, 0, false}, {150, 10 * time.Millisecond, true, false, 0, false}}},
		{"a queue under the floor is not standing", []step{{0, 30 * time.Millisecond, false, false, 40 * time.Millisecond, false}, {200, 39 * time.Millisecond, false, false, 40 * time.Millisecond, false}}},
		{"the floor raises the bar, not the rule", []step{{0, 50 * time.Millisecond, false, false, 40 * time.Millisecond, false}, {100, 45 * time.Millisecond, false, true, 40 * time.Millisecond, false}}},
		{"a lone waiter is served even while dropping", []step{{0, 10 * time.Millisecond, false, false, 0, false}, {100, 10 * time.Millisecond, false, true, 0, false}, {101, 50 * time.Millisecond, false, false, 0, true}, {102, 10 * time.Millisecond, false, true, 0, false}}},
		{"a lone waiter does not make a queue standing", []step{{0, 10 * time.Millisecond, false, false, 0, false}, {50, 10 * time.Millisecond, false, false, 0, true}, {120, 10 * time.Millisecond, false, false, 0, false}, {200, 10 * time.Millisecond, false, false, 0, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &codel{target: target, interval: interval}
			for i, s := range tt.steps {
				if s.empty {
					c.empty()
				}
				queued := 2
				if s.lone {
					queued = 1
				}
				if got := c.shouldDrop(at(s.at), s.sojourn, s.floor, queued); got != s.drop {
					t.Fatalf("step %d (t=%dms, sojourn %v): got drop=%v, want %v", i, s.at, s.sojourn, got, s.drop)
				}
			}
		})
	}
}

func TestCoDelFloor(t *testing.T) {
	const s = 12 * time.Millisecond
	tests := []struct {
		slots    int64
		min, max time.Duration
	}{
		{1, 12 * s, 12 * s},            // twelve requests deep
		{2, 6 * s, 6 * s},              // two renderers of 12 ms: 72 ms
		{10, 2 * s, 22 * s / 10},       // about two service times
		{60, s * 85 / 100, s * 9 / 10}, // many async slots: under one
		{0, 12 * s, 12 * s},            // no slot counts as one
	}
	for _, tt := range tests {
		if got := codelFloor(s, tt.slots); got < tt.min || got > tt.max {
			t.Errorf("codelFloor(%v, %d) = %v, want in [%v, %v]", s, tt.slots, got, tt.min, tt.max)
		}
	}
}

// The regime: calm until a window's sheds for overload pass a fifth of
// its arrivals, overloaded for the next window, calm again after one
// under it. Calm, a queue is standing only past calmSojourn (or the floor
// if longer); overloaded, past the floor.
func TestCoDelRegime(t *testing.T) {
	const floor = 40 * time.Millisecond
	base := time.Unix(1000, 0)
	c := &codel{target: 5 * time.Millisecond, interval: 100 * time.Millisecond}
	if got := c.judged(floor); got != calmSojourn {
		t.Fatalf("before any window: judged %v, want calm %v", got, calmSojourn)
	}
	if got := c.judged(time.Second); got != time.Second {
		t.Errorf("calm with a floor above calmSojourn: judged %v, want the floor", got)
	}
	steps := []struct {
		arrivals, sheds uint64 // during the window just ended
		overloaded      bool
	}{
		{100, 50, true},   // half shed: 2x
		{100, 21, true},   // just over a fifth
		{100, 20, false},  // a fifth is calm
		{100, 3, false},   // capacity: a clump now and then
		{0, 0, false},     // no arrivals
		{1000, 600, true}, // overload again
	}
	now := base
	var arrivals, sheds uint64
	if !c.due(now) {
		t.Fatal("a codel with no window begun is not due")
	}
	c.roll(now, arrivals, sheds) // begins the first window
	for i, s := range steps {
		if c.due(now.Add(regimeWindow - time.Nanosecond)) {
			t.Fatalf("step %d: due before the window ended", i)
		}
		now = now.Add(regimeWindow)
		if !c.due(now) {
			t.Fatalf("step %d: not due when the window ended", i)
		}
		arrivals += s.arrivals
		sheds += s.sheds
		c.roll(now, arrivals, sheds)
		want := calmSojourn
		if s.overloaded {
			want = floor
		}
		if got := c.judged(floor); got != want {
			t.Errorf("step %d (%d of %d shed): judged %v, want %v", i, s.sheds, s.arrivals, got, want)
		}
	}
}
