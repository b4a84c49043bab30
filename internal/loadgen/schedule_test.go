package loadgen

import (
	"testing"
	"time"
)

func TestScheduleCounts(t *testing.T) {
	tests := []struct {
		name   string
		phases []Phase
		want   int
	}{
		{"constant", []Phase{{Rate: 100, Duration: time.Second}}, 100},
		{"fractional", []Phase{{Rate: 2.5, Duration: 2 * time.Second}}, 5},
		{"slower than the phase", []Phase{{Rate: 0.5, Duration: time.Second}}, 1},
		{"pause", []Phase{{Rate: 0, Duration: time.Second}}, 0},
		{"ramp up", []Phase{{Rate: 100, RampTo: 300, Duration: time.Second}}, 200},
		{"ramp down", []Phase{{Rate: 300, RampTo: 100, Duration: time.Second}}, 200},
		{"ramp from zero", []Phase{{Rate: 0, RampTo: 200, Duration: time.Second}}, 100},
		{"steps", []Phase{
			{Rate: 100, Duration: time.Second},
			{Rate: 0, Duration: time.Second},
			{Rate: 200, Duration: 500 * time.Millisecond},
		}, 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSchedule(tt.phases)
			n := 0
			last := time.Duration(-1)
			for {
				at, _, ok := s.next()
				if !ok {
					break
				}
				if at < last {
					t.Fatalf("send %d at %v, before the previous at %v", n, at, last)
				}
				last = at
				n++
			}
			if n != tt.want {
				t.Errorf("got %d sends, want %d", n, tt.want)
			}
		})
	}
}

func TestScheduleTimes(t *testing.T) {
	s := newSchedule([]Phase{
		{Rate: 10, Duration: 300 * time.Millisecond},
		{Rate: 0, Duration: time.Second},
		{Rate: 100, RampTo: 300, Duration: time.Second},
	})
	type send struct {
		at    time.Duration
		phase int
	}
	var got []send
	for {
		at, phase, ok := s.next()
		if !ok {
			break
		}
		got = append(got, send{at, phase})
	}
	want := []send{{0, 0}, {100 * time.Millisecond, 0}, {200 * time.Millisecond, 0}, {1300 * time.Millisecond, 2}}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("send %d = %+v, want %+v", i, got[i], w)
		}
	}
	// The ramp's rate at t is 100+200t, so N(t) = 100t + 100t^2: 75 sends
	// are due in its first half and 125 in its second.
	firstHalf := 0
	for _, s := range got[3:] {
		if s.at < 1800*time.Millisecond {
			firstHalf++
		}
	}
	if got, want := firstHalf, 75; got != want {
		t.Errorf("ramp's first half: got %d sends, want %d", got, want)
	}
	if got, want := len(got)-3, 200; got != want {
		t.Errorf("ramp: got %d sends, want %d", got, want)
	}
}
