package admission

import (
	"context"
	"math"
	"slices"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/limit"
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
		if got := codelFloor(s, tt.slots, standingDepth); got < tt.min || got > tt.max {
			t.Errorf("codelFloor(%v, %d) = %v, want in [%v, %v]", s, tt.slots, got, tt.min, tt.max)
		}
	}
}

// Under an overload of rho a queue of k requests keeps the slots idle for
// want of one (rho-1)/(rho^(k+1)-1) of the time: the depth is the k at
// which that is idleShare, twelve requests at most (1.2x needs sixteen),
// two at least, and shallower the heavier the overload.
func TestOverloadDepth(t *testing.T) {
	idle := func(rho, k float64) float64 { return (rho - 1) / (math.Pow(rho, k+1) - 1) }
	last := float64(standingDepth)
	for _, rho := range []float64{1.5, 2, 3, 4, 8} {
		k := overloadDepth(rho)
		if got := idle(rho, k); math.Abs(got-idleShare) > idleShare/100 {
			t.Errorf("at %vx: depth %.2f idles the slots %.4f of the time, want %v", rho, k, got, idleShare)
		}
		if k >= last {
			t.Errorf("at %vx: depth %.2f, want under %.2f (the lighter overload's)", rho, k, last)
		}
		last = k
	}
	for _, tt := range []struct{ rho, want float64 }{
		{0.5, standingDepth}, {1, standingDepth}, {1.005, standingDepth}, {1.2, standingDepth}, {1000, minDepth},
	} {
		if got := overloadDepth(tt.rho); got != tt.want {
			t.Errorf("overloadDepth(%v) = %v, want %v", tt.rho, got, tt.want)
		}
	}
}

// The floor's depth follows the overload measured: twelve requests while
// calm or before the slots' busy rate is known, the overload's depth once
// overloaded, twelve again once calm.
func TestCoDelDepth(t *testing.T) {
	r := newRegimeWindows(50)
	if got := r.c.depth(); got != standingDepth {
		t.Fatalf("before any window: depth %v, want %v", got, float64(standingDepth))
	}
	// 2x before any busy window: overloaded, nothing to measure it by.
	if !r.window(40, 0, 20, 0) {
		t.Fatal("2x with half shed: calm, want overloaded")
	}
	if got := r.c.depth(); got != standingDepth {
		t.Errorf("overloaded before a busy rate: depth %v, want %v", got, float64(standingDepth))
	}
	// The slots finish 200/s while a queue stands, 400/s arrive.
	r.windows(8, 40, 20, 20, 0)
	if got, want := r.c.depth(), overloadDepth(r.c.arrivalRate/r.c.busyRate); got != want || got > overloadDepth(1.9) {
		t.Errorf("at 2x: depth %v, want %v", got, want)
	}
	// Back at capacity, nothing shed: calm, twelve requests.
	if r.windows(8, 20, 20, 0, 0) {
		t.Fatal("back at 1x for 0.8 s: overloaded, want calm")
	}
	if got := r.c.depth(); got != standingDepth {
		t.Errorf("calm again: depth %v, want %v", got, float64(standingDepth))
	}
}

// The regime: overloaded for the next window when more than a fifth of a
// window's arrivals were shed for overload, or more than two fifths were
// not admitted in it (shed, or left queued); calm again after a window
// under both. A window with fewer than 16 arrivals goes on. Calm, a
// queue is standing only past calmSojourn (or the floor if longer, up to
// calmLongest less an interval); overloaded, past the floor (at most
// calmSojourn).
func TestCoDelRegime(t *testing.T) {
	const floor = 40 * time.Millisecond
	c := &codel{target: 5 * time.Millisecond, interval: 100 * time.Millisecond}
	if got := c.judged(floor); got != calmSojourn {
		t.Fatalf("before any window: judged %v, want calm %v", got, calmSojourn)
	}
	if got := c.judged(300 * time.Millisecond); got != 300*time.Millisecond {
		t.Errorf("calm with a floor above calmSojourn: judged %v, want the floor", got)
	}
	// However slow the service, a request served calm waits at most
	// calmLongest: judged standing an interval before it.
	if got, want := c.judged(2*time.Second), calmLongest-c.interval; got != want {
		t.Errorf("calm with a floor of 2 s: judged %v, want %v", got, want)
	}
	steps := []struct {
		name       string
		arrivals   uint64 // during the window
		sheds      uint64 // of them, shed for overload
		grew       int    // the queue's growth
		overloaded bool
	}{
		{"2x, the onset: half queued", 40, 0, 20, true},
		{"2x: half shed", 40, 20, 0, true},
		{"1.5x: a third shed", 60, 20, 0, true},
		{"a fifth shed is calm", 100, 20, 0, false},
		{"two fifths not admitted is calm", 100, 10, 30, false},
		{"just over two fifths not admitted", 100, 10, 31, true},
		{"capacity: the queue grew a little", 20, 0, 4, false},
		{"the queue shed: shed, but none left over", 20, 3, -10, false},
		{"the queue drained", 20, 0, -10, false},
		{"4x", 80, 30, 30, true},
	}
	now := time.Unix(1000, 0)
	var arrivals, sheds uint64
	queued := 50
	if !c.due(now) {
		t.Fatal("a codel with no window begun is not due")
	}
	c.roll(now, arrivals, 0, sheds, queued, 0) // begins the first window
	for _, s := range steps {
		if c.due(now.Add(regimeWindow - time.Nanosecond)) {
			t.Fatalf("%s: due before the window's shortest length", s.name)
		}
		now = now.Add(regimeWindow)
		if !c.due(now) {
			t.Fatalf("%s: not due at the window's end", s.name)
		}
		arrivals += s.arrivals
		sheds += s.sheds
		queued += s.grew
		c.roll(now, arrivals, 0, sheds, queued, 0)
		want := calmSojourn
		if s.overloaded {
			want = floor
		}
		if got := c.judged(floor); got != want {
			t.Errorf("%s: judged %v, want %v", s.name, got, want)
		}
	}
	// Too few arrivals: the window goes on, the regime as it was
	// (overloaded), until enough have come.
	now = now.Add(regimeWindow)
	arrivals += regimeArrivals - 1
	c.roll(now, arrivals, 0, sheds, queued, 0)
	if got := c.judged(floor); got != floor {
		t.Errorf("a window of %d arrivals: judged %v, want it not judged yet (the floor)", regimeArrivals-1, got)
	}
	now = now.Add(regimeWindow)
	arrivals++
	c.roll(now, arrivals, 0, sheds, queued, 0)
	if got := c.judged(floor); got != calmSojourn {
		t.Errorf("the window with its %dth arrival: judged %v, want calm", regimeArrivals, got)
	}
	// A waiter leaves the queue an instant before it is counted as given
	// up: the counts step back by one, and the window goes on.
	now = now.Add(regimeWindow)
	c.roll(now, arrivals-1, 0, sheds, queued-1, 0)
	if got := c.judged(floor); got != calmSojourn {
		t.Errorf("counts one back: judged %v, want the window not judged (calm)", got)
	}
	now = now.Add(regimeWindow)
	c.roll(now, arrivals+40, 0, sheds+30, queued, 0)
	if got := c.judged(floor); got != floor {
		t.Errorf("after the step back, 30 of 40 shed: judged %v, want overloaded", got)
	}
	// Overloaded, the floor stands a queue at most calmSojourn.
	if got := c.judged(2 * time.Second); got != calmSojourn {
		t.Errorf("overloaded with a floor of 2 s: judged %v, want %v", got, calmSojourn)
	}
}

// regimeWindows feeds a codel regime windows of counts, from a queue of
// queued requests, as the Controller would, each regimeWindow long.
type regimeWindows struct {
	c                         *codel
	now                       time.Time
	arrivals, admitted, sheds uint64
	queued                    int
	inflight                  int64
}

const regimeFloor = 40 * time.Millisecond

func newRegimeWindows(queued int) *regimeWindows {
	r := &regimeWindows{c: &codel{target: 5 * time.Millisecond, interval: 100 * time.Millisecond}, now: time.Unix(1000, 0), queued: queued}
	r.c.roll(r.now, 0, 0, 0, queued, 0) // begins the first window
	return r
}

// afterLull returns regime windows whose slots finished 200/s while a
// queue of 10 stood, 20 arriving a window, for eight windows, and then
// idled for lull: its clock is at the end of the window that waited
// through the lull for its 16 arrivals.
func afterLull(lull time.Duration) *regimeWindows {
	r := newRegimeWindows(10)
	r.windows(8, 20, 20, 0, 0)
	r.now = r.now.Add(lull)
	r.window(16, 16, 0, 0)
	return r
}

// window ends a window in which arrived requests came, admits were
// admitted, shed were shed, and the requests held grew by held; it reports
// whether the regime is then overloaded.
func (r *regimeWindows) window(arrived, admits, shed uint64, held int64) bool {
	r.now = r.now.Add(regimeWindow)
	r.arrivals += arrived
	r.admitted += admits
	r.sheds += shed
	r.inflight += held
	r.queued += int(arrived) - int(admits) - int(shed)
	r.c.roll(r.now, r.arrivals, r.admitted, r.sheds, r.queued, r.inflight)
	return r.c.judged(regimeFloor) == regimeFloor
}

// windows ends n windows of the same counts (see window) and reports
// whether the regime is overloaded after the last.
func (r *regimeWindows) windows(n int, arrived, admits, shed uint64, held int64) bool {
	overloaded := false
	for range n {
		overloaded = r.window(arrived, admits, shed, held)
	}
	return overloaded
}

// A queue that grows because the slots slowed (a stall: a neighbour took
// the CPU) is not an overload: what arrives is no more than the slots
// admit when they keep up, and the backlog is queued through up to the
// calm sojourn. A queue that grows because arrivals surged past half again
// that rate is one, as is a fall in the slots' rate that lasts, once the
// rate measured in busy windows has followed it down. Before any busy
// window the queue's growth alone judges.
func TestCoDelStallIsNotOverload(t *testing.T) {
	r := newRegimeWindows(10)
	if !r.window(20, 5, 0, 0) {
		t.Fatal("a stall before any busy window: calm, want overloaded (the queue's growth alone judges)")
	}
	// The slots admit 200/s while the queue stands; 20 arrive a window.
	for range 8 {
		if r.window(20, 20, 0, 0) {
			t.Fatal("a standing queue at 1x: overloaded, want calm")
		}
	}
	for i := range 3 {
		if r.window(20, 5, 0, 0) {
			t.Fatalf("stall window %d, 20 arrived and 5 admitted: overloaded, want calm", i+1)
		}
	}
	r.windows(4, 20, 20, 0, 0)
	if !r.window(40, 20, 0, 0) {
		t.Error("arrivals surged to twice the slots' rate: calm, want overloaded")
	}
	// The slots' rate halves for good: once the busy windows' rate has
	// followed it, 20 arrivals a window are a surge past it.
	if !r.windows(20, 20, 10, 0, 0) {
		t.Error("the slots' rate halved for 2 s: calm, want overloaded")
	}
}

// An overload's regime is held through the windows between the floor's
// bursts of sheds, which shed nothing and grow the queue by less than two
// fifths of their arrivals, while arrivals stay past the slots' busy rate
// and the sheds' smoothed share above 5%. It ends once the sheds fade
// (the load back at capacity) or arrivals fall under the busy rate.
func TestCoDelOverloadHeld(t *testing.T) {
	r := newRegimeWindows(30)
	// The slots finish 200/s while the queue stands; 20 arrive a window.
	r.windows(8, 20, 20, 0, 0)
	// 1.4x: 28 arrive a window, 8 of them shed.
	if !r.windows(4, 28, 20, 8, 0) {
		t.Fatal("1.4x with 8 of 28 shed a window: calm, want overloaded")
	}
	for i := range 2 {
		if !r.window(28, 20, 0, 0) {
			t.Fatalf("1.4x, window %d between bursts of sheds: calm, want overloaded (held)", i+1)
		}
	}
	if !r.window(28, 20, 8, 0) {
		t.Fatal("1.4x, sheds again: calm, want overloaded")
	}
	// Back at capacity: nothing shed; the sheds' share fades.
	if r.windows(5, 20, 20, 0, 0) {
		t.Error("back at 1x without sheds for 0.5 s: overloaded, want calm")
	}

	r = newRegimeWindows(30)
	r.windows(8, 20, 20, 0, 0)
	r.windows(4, 28, 20, 8, 0)
	// 0.8x: arrivals fall under the busy rate while the queue's rest is
	// still shed.
	if r.windows(4, 16, 20, 2, 0) {
		t.Error("0.8x for 0.4 s, still shedding: overloaded, want calm")
	}

	// An onset judged by a stall's queue alone, before any busy window,
	// sheds nothing: it is not held.
	r = newRegimeWindows(10)
	if !r.window(20, 5, 0, 0) {
		t.Fatal("a stall before any busy window: calm, want overloaded")
	}
	if r.window(20, 20, 0, 0) {
		t.Error("after a stall judged overloaded, at 1x: overloaded, want calm (nothing shed: not held)")
	}
}

// An overload of 1.3x grows the queue by less than two fifths of its
// arrivals a window and sheds nothing at first; the queue growing in three
// windows in a row while the slots keep their pace, and the arrivals
// outrunning the busy rate by more than a fifth, judge it. A queue that
// grows as fast because the slots slowed (a stall) does not.
func TestCoDelOnsetByPacedGrowth(t *testing.T) {
	r := newRegimeWindows(10)
	// The slots finish 200/s while the queue stands; 20 arrive a window.
	r.windows(8, 20, 20, 0, 0)
	// 1.3x: 26 arrive a window, 20 admitted, none shed.
	if r.windows(2, 26, 20, 0, 0) {
		t.Error("1.3x for 0.2 s: overloaded, want calm (two windows of growth)")
	}
	if !r.windows(3, 26, 20, 0, 0) {
		t.Error("1.3x for 0.5 s, the queue growing in every window: calm, want overloaded")
	}

	// After a lull of 10 s, the window that waited for its arrivals does
	// not hold the arrivals' smoothed rate down: 1.3x is judged as soon.
	r = afterLull(10 * time.Second)
	if !r.windows(4, 26, 20, 0, 0) {
		t.Error("1.3x for 0.4 s after a lull, the queue growing in every window: calm, want overloaded")
	}

	// A stall: the slots at half the busy rate for half a second, the
	// queue growing in every window. The busy rate it pulls down, by a
	// fifth in four windows, leaves the arrivals more than a fifth past
	// it.
	r = newRegimeWindows(10)
	r.windows(8, 20, 20, 0, 0)
	for i := range 5 {
		if r.window(20, 10, 0, 0) {
			t.Fatalf("a stall at half the busy rate, window %d: overloaded, want calm", i+1)
		}
	}
}

// Slots are slow for a while after a lull (code compiled again, caches
// cold): for lullPace what they finish does not lower the busy rate, so
// that arrivals no faster than before, their backlog shed past the calm
// sojourn, are not judged an overload whose floor would shed the rest.
// A fall that outlasts it is followed as any other. An overload after a
// lull is judged by the queue's growth while the slots warm.
func TestCoDelWarmingAfterALullIsNotOverload(t *testing.T) {
	r := afterLull(30 * time.Second)
	// Half the pace, a quarter of the arrivals shed past the calm sojourn.
	for i := range int(lullPace / regimeWindow) {
		if r.window(20, 10, 5, 0) {
			t.Fatalf("warming after a lull, window %d: overloaded, want calm", i+1)
		}
	}
	if !r.windows(10, 20, 10, 5, 0) {
		t.Error("the slots at half their pace for 1 s past lullPace, shedding: calm, want overloaded (a fall that lasts)")
	}

	// An overload after a lull: 1.4x the pace kept before it, the slots
	// at half that pace while they warm, nothing shed yet. The queue's
	// growth judges its onset within three windows.
	r = afterLull(30 * time.Second)
	if r.windows(2, 28, 10, 0, 0) {
		t.Error("1.4x after a lull for 0.2 s: overloaded, want calm (two windows of growth)")
	}
	if !r.window(28, 10, 0, 0) {
		t.Error("1.4x after a lull for 0.3 s, the queue growing in every window while the slots warm: calm, want overloaded")
	}

	// The same slowdown without a lull is followed at once: the arrivals
	// pass 1.2 times the busy rate within half a second.
	r = newRegimeWindows(10)
	r.windows(8, 20, 20, 0, 0)
	if !r.windows(5, 20, 10, 5, 0) {
		t.Error("the slots at half their pace for 0.5 s, shedding, no lull: calm, want overloaded")
	}
}

// At about capacity a queue that drifts past the calm sojourn is shed as
// it passes it, and a window may see a fifth of its arrivals shed; that
// alone is not an overload while arrivals come no faster than 1.2 times
// the slots' busy rate (smoothed over windows): the floor would shed the
// rest of the queue, requests the slots were about to serve. Arrivals
// that stay past that rate with the same sheds are one. The busy rate is
// what the slots finish: a limit raised, which admits a bunch at once, is
// not taken for capacity.
func TestCoDelShedsAtCapacityAreNotOverload(t *testing.T) {
	r := newRegimeWindows(30)
	// The slots finish 200/s while the queue stands; 20 arrive a window.
	r.windows(8, 20, 20, 0, 0)
	if r.window(20, 14, 6, 0) {
		t.Error("at capacity, 6 of 20 shed as the queue passed the calm sojourn: overloaded, want calm")
	}
	// Twice the limit is raised by 14: 34 admitted in a window, 20 of
	// them finished.
	r.windows(2, 20, 34, 0, 14)
	if !r.windows(8, 26, 20, 6, 0) {
		t.Error("1.3x for 0.8 s, after the limit was raised: calm, want overloaded")
	}
}

// While a queue stands under overload, adaptive LIFO serves the newest
// request first: the oldest are the likeliest to have been given up on.
// Calm, at or below capacity, the queue is served first in first out even
// with adaptive LIFO on: a standing queue there is a drift or a stall's
// backlog, and newest first would leave all of it to age past the calm
// sojourn and be shed at once, where in order only what passes it is.
func TestAdaptiveLIFOUnderOverloadOnly(t *testing.T) {
	for _, tt := range []struct {
		lifo, overloaded bool
		want             []int
	}{
		{false, true, []int{1, 2, 3}},
		{true, false, []int{1, 2, 3}},
		{true, true, []int{1, 3, 2}},
	} {
		synctest.Test(t, func(t *testing.T) {
			c, err := New(Options{Limit: limit.NewFixed(1), CoDelTarget: 5 * time.Millisecond, AdaptiveLIFO: tt.lifo})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.mu.Lock()
			c.codel.overloaded = tt.overloaded
			c.mu.Unlock()
			held, err := c.Acquire(context.Background(), Request{})
			if err != nil {
				t.Fatal(err)
			}
			type admitted struct {
				id int
				p  Permit
			}
			out := make(chan admitted, 3)
			enqueue := func(id int) {
				go func() {
					p, err := c.Acquire(context.Background(), Request{})
					if err != nil {
						t.Errorf("waiter %d: %v", id, err)
					}
					out <- admitted{id, p}
				}()
				synctest.Wait()
			}
			enqueue(1)
			// Sojourn above the calm sojourn (250 ms): the queue stands
			// in either regime.
			time.Sleep(300 * time.Millisecond)
			enqueue(2)
			enqueue(3)
			held.Release()
			var got []int
			for range 3 {
				a := <-out
				got = append(got, a.id)
				if a.p.c != nil {
					a.p.Release()
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("lifo %v, overloaded %v: got order %v, want %v", tt.lifo, tt.overloaded, got, tt.want)
			}
		})
	}
}

// The regime's arrivals count every request once: admitted, shed, or
// given up by its caller while queued.
func TestArrivalsCountEveryRequest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c, err := New(Options{Limit: limit.NewFixed(1), QueueSize: 10, CoDelTarget: 5 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		held, err := c.Acquire(context.Background(), Request{})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		for range 3 {
			go func() {
				if _, err := c.Acquire(ctx, Request{}); err == nil {
					t.Error("a waiter whose caller gave up was admitted")
				}
			}()
		}
		synctest.Wait() // all three queued
		if got := c.Stats().Queued; got != 3 {
			t.Fatalf("queued %d, want 3", got)
		}
		cancel()
		synctest.Wait()
		held.Release()
		if got := c.arrivals(); got != 4 {
			t.Errorf("arrivals after one admitted and three given up: %d, want 4", got)
		}
	})
}

func TestAutoQueueSize(t *testing.T) {
	tests := []struct {
		service time.Duration
		slots   int64
		want    int
	}{
		{0, 64, autoQueueMin},                      // no service time yet
		{150 * time.Millisecond, 66, 220},          // async workers: 440/s for half a second
		{6 * time.Millisecond, 2, 166},             // two renderers of 6 ms
		{30 * time.Millisecond, 2, autoQueueMin},   // slow renderers: the floor
		{time.Millisecond, 8, 4000},                // a fast API on eight CPUs
		{100 * time.Microsecond, 64, autoQueueMax}, // the cap on memory
	}
	for _, tt := range tests {
		if got := autoQueueSize(tt.service, tt.slots); got != tt.want {
			t.Errorf("autoQueueSize(%v, %d): got %d, want %d", tt.service, tt.slots, got, tt.want)
		}
	}
}
