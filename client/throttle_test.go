package client

import (
	"math"
	"testing"
	"time"
)

func TestThrottleProbability(t *testing.T) {
	tests := []struct {
		name              string
		k, maxP, minRate  float64
		requests, accepts int64
		at                time.Duration // query time; the counts are at 0
		want              float64
	}{
		{"healthy", 2, 1, 0.2, 100, 100, 0, 0},
		{"half accepted is still fine with K=2", 2, 1, 0.2, 100, 50, 0, 0},
		{"40% accepted", 2, 1, 0.2, 100, 40, 0, 20.0 / 101},
		{"nothing accepted", 2, 1, 0.2, 100, 0, 0, 100.0 / 101},
		{"K=1 rejects at the first failure", 1, 1, 0.2, 100, 90, 0, 10.0 / 101},
		{"below the minimum rate", 2, 1, 0.2, 23, 0, 0, 0},
		{"at the minimum rate", 2, 1, 0.2, 24, 0, 0, 24.0 / 25},
		{"no minimum: one failure", 2, 1, 0, 1, 0, 0, 0.5},
		{"capped", 2, 0.8, 0.2, 100, 0, 0, 0.8},
		{"under the cap", 2, 0.8, 0.2, 100, 40, 0, 20.0 / 101},
		{"switched off", 0, 1, 0, 100, 0, 0, 0},
		{"forgotten after the window", 2, 1, 0.2, 100, 0, 2*time.Minute + time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newThrottle(tt.k, tt.maxP, 2*time.Minute, tt.minRate)
			th.win.add(at(0), tt.requests, tt.accepts)
			if got := th.probability(at(tt.at)); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("probability = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestThrottleAllow(t *testing.T) {
	tests := []struct {
		name string
		rnd  float64
		want bool
	}{
		{"draw below p rejects", 0.5, false},
		{"draw at p sends", 0.8, true},
		{"draw above p sends", 0.99, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			th := newThrottle(2, 1, 2*time.Minute, 0)
			th.win.add(at(0), 4, 0) // p = 4/5
			ok, p := th.allow(at(0), tt.rnd)
			if ok != tt.want || p != 0.8 {
				t.Errorf("allow(%v) = (%v, %v), want (%v, 0.8)", tt.rnd, ok, p, tt.want)
			}
			if requests, _ := th.win.sum(at(0)); requests != 5 {
				t.Errorf("requests after allow = %d, want 5: every request counts, sent or not", requests)
			}
		})
	}
}

// A client of a host that accepts nothing rejects most of its own requests
// locally; once the host accepts again, the client is back to sending
// everything within two windows, as the refusals age out. Without the cap
// on p it takes seven.
func TestThrottleConvergesAndRecovers(t *testing.T) {
	th := newThrottle(2, 0.8, 2*time.Minute, 0.2)
	rnd := 0.0
	draw := func() float64 { rnd = math.Mod(rnd+0.618034, 1); return rnd } // evenly spread
	step := 100 * time.Millisecond                                         // 10 requests a second
	now := at(0)
	for ; now.Before(at(time.Minute)); now = now.Add(step) {
		th.allow(now, draw())
	}
	if p := th.probability(now); p != 0.8 {
		t.Fatalf("after a minute of refusals p = %v, want the cap 0.8", p)
	}
	for ; now.Before(at(5 * time.Minute)); now = now.Add(step) {
		if ok, _ := th.allow(now, draw()); ok {
			th.accepted(now)
		}
	}
	if p := th.probability(now); p != 0 {
		t.Errorf("three minutes after the host recovered p = %v, want 0", p)
	}
}

func TestThrottleProbeAndReset(t *testing.T) {
	th := newThrottle(2, 1, 2*time.Minute, 0)
	th.win.add(at(0), 9, 0)
	th.probe(at(0))
	if requests, accepts := th.win.sum(at(0)); requests != 10 || accepts != 0 {
		t.Errorf("after a probe counts = (%d, %d), want (10, 0)", requests, accepts)
	}
	th.reset()
	if p := th.probability(at(0)); p != 0 {
		t.Errorf("after reset p = %v, want 0", p)
	}
}
