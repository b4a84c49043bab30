package client

import (
	"testing"
	"time"
)

func TestBudget(t *testing.T) {
	type step struct {
		at       time.Duration
		requests int // original requests counted first
		retries  int // then this many retries asked for...
		want     int // ...of which this many are granted
	}
	tests := []struct {
		name    string
		ratio   float64
		minRate float64
		steps   []step
	}{
		{"the floor lets a quiet client retry", 0.1, 0.3, []step{
			{0, 1, 5, 3},
		}},
		{"the floor is a rate over the window", 0.1, 0.3, []step{
			{0, 1, 3, 3},
			{5 * time.Second, 1, 3, 0},
			{10 * time.Second, 1, 3, 3},
		}},
		{"ratio above the floor", 0.1, 0, []step{
			{0, 100, 20, 10},
		}},
		{"the larger of floor and ratio bounds", 0.1, 0.3, []step{
			{0, 100, 20, 10},
		}},
		{"ratio counts retries over the window", 0.1, 0, []step{
			{0, 100, 10, 10},
			{5 * time.Second, 0, 5, 0},
			{11 * time.Second, 100, 10, 10},
		}},
		{"no floor, no ratio, no retries", 0, 0, []step{
			{0, 100, 1, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBudget(tt.ratio, tt.minRate, 10*time.Second)
			for i, s := range tt.steps {
				for range s.requests {
					b.request(at(s.at))
				}
				got := 0
				for range s.retries {
					if b.tryRetry(at(s.at)) {
						got++
					}
				}
				if got != s.want {
					t.Errorf("step %d: %d retries granted, want %d", i, got, s.want)
				}
			}
		})
	}
}
