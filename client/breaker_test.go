package client

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	cfg := breakerConfig{failures: 3, ratio: 0.5, minVolume: 10, cooldown: 5 * time.Second, probes: 2, windowSize: 10 * time.Second}
	// Each event is a letter at a time: s success, f failure (both sent and
	// reported at once), a attempt (allowed, kept in flight), x attempt
	// rejected, ? state check.
	type ev struct {
		at   time.Duration
		what byte
		want BreakerState // the state after the event
	}
	tests := []struct {
		name   string
		cfg    breakerConfig
		events []ev
	}{
		{"stays closed on success", cfg, []ev{{0, 's', BreakerClosed}, {0, 's', BreakerClosed}}},
		{"opens on consecutive failures", cfg, []ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerOpen}, {time.Second, 'x', BreakerOpen}}},
		{"a success resets the run", cfg, []ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 's', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerOpen}}},
		{"half-open after the cooldown", cfg, []ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerOpen},
			{5*time.Second - 1, '?', BreakerOpen}, {5 * time.Second, '?', BreakerHalfOpen}}},
		{"probe success closes", cfg, []ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerOpen}, {5 * time.Second, 's', BreakerClosed}, {6 * time.Second, 's', BreakerClosed}}},
		{"probe failure opens again", cfg, []ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerOpen}, {5 * time.Second, 'f', BreakerOpen},
			{9 * time.Second, 'x', BreakerOpen}, {10 * time.Second, '?', BreakerHalfOpen}}},
		{"half-open lets a few probes through at once", cfg, []ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerOpen},
			{5 * time.Second, 'a', BreakerHalfOpen}, {5 * time.Second, 'a', BreakerHalfOpen}, {5 * time.Second, 'x', BreakerHalfOpen}}},
		{"failure ratio opens with enough volume", breakerConfig{failures: -1, ratio: 0.5, minVolume: 4, cooldown: time.Second, windowSize: 10 * time.Second},
			[]ev{{0, 'f', BreakerClosed}, {0, 's', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 's', BreakerClosed}, {0, 'f', BreakerOpen}}},
		{"failure ratio needs the volume", breakerConfig{failures: -1, ratio: 0.5, minVolume: 10, cooldown: time.Second, windowSize: 10 * time.Second},
			[]ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}}},
		{"old failures leave the ratio window", breakerConfig{failures: -1, ratio: 0.5, minVolume: 4, cooldown: time.Second, windowSize: 10 * time.Second},
			[]ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {20 * time.Second, 's', BreakerClosed}, {20 * time.Second, 'f', BreakerClosed}, {20 * time.Second, 's', BreakerClosed}, {20 * time.Second, 's', BreakerClosed}}},
		{"both rules off: never opens", breakerConfig{failures: -1, ratio: -1, cooldown: time.Second, windowSize: 10 * time.Second},
			[]ev{{0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}, {0, 'f', BreakerClosed}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBreaker(tt.cfg)
			for i, e := range tt.events {
				now := at(e.at)
				switch e.what {
				case 's', 'f':
					tk, ok := b.allow(now)
					if !ok {
						t.Fatalf("event %d: allow = false, want true", i)
					}
					b.record(now, tk, e.what == 'f')
				case 'a':
					if _, ok := b.allow(now); !ok {
						t.Fatalf("event %d: allow = false, want true", i)
					}
				case 'x':
					if _, ok := b.allow(now); ok {
						t.Fatalf("event %d: allow = true, want false", i)
					}
				}
				if got := b.state(now); got != e.want {
					t.Fatalf("event %d (%c at %v): state %v, want %v", i, e.what, e.at, got, e.want)
				}
			}
		})
	}
}

// Results of requests let through before a transition must not decide the
// new state: a slow success sent before the breaker opened does not close
// it, and a late failure from the closed state does not reopen it.
func TestBreakerStaleTickets(t *testing.T) {
	b := newBreaker(breakerConfig{failures: 1, cooldown: time.Second, probes: 1, windowSize: time.Second})
	slow, _ := b.allow(at(0))
	tk, _ := b.allow(at(0))
	b.record(at(0), tk, true)
	if got := b.record(at(0), slow, false); got != BreakerOpen {
		t.Fatalf("after a stale success: state %v, want open", got)
	}
	probe, ok := b.allow(at(time.Second))
	if !ok || !probe.probe {
		t.Fatalf("after the cooldown allow = (%+v, %v), want a probe", probe, ok)
	}
	b.record(at(time.Second), probe, false)
	if got := b.record(at(time.Second), slow, true); got != BreakerClosed {
		t.Errorf("after a stale failure: state %v, want closed", got)
	}
}

func TestBreakerCancelFreesProbe(t *testing.T) {
	b := newBreaker(breakerConfig{failures: 1, cooldown: time.Second, probes: 1, windowSize: time.Second})
	tk, _ := b.allow(at(0))
	b.record(at(0), tk, true)
	probe, _ := b.allow(at(time.Second))
	if _, ok := b.allow(at(time.Second)); ok {
		t.Fatal("second probe allowed, want only one at a time")
	}
	b.cancel(probe)
	if _, ok := b.allow(at(time.Second)); !ok {
		t.Error("probe after cancel refused, want allowed")
	}
}

func TestBreakerStateString(t *testing.T) {
	for s, want := range map[BreakerState]string{BreakerClosed: "closed", BreakerOpen: "open", BreakerHalfOpen: "half-open", 7: "BreakerState(7)"} {
		if got := s.String(); got != want {
			t.Errorf("%d.String() = %q, want %q", s, got, want)
		}
	}
}
