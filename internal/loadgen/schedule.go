package loadgen

import (
	"math"
	"time"
)

// sendTime returns when, counted from the phase's start, the phase's i-th
// send (from 0) is due, and false when the phase ends first. The rate
// changes linearly from Rate to endRate, so the number of sends due by t is
// N(t) = r0 t + a t^2 with a = (r1-r0)/2D; the i-th send is at N(t) = i.
func (p Phase) sendTime(i int) (time.Duration, bool) {
	r0, r1 := p.Rate, p.endRate()
	if r0 == 0 && r1 == 0 {
		return 0, false
	}
	if i == 0 {
		return 0, true
	}
	D := p.Duration.Seconds()
	a := (r1 - r0) / (2 * D)
	disc := r0*r0 + 4*a*float64(i)
	if disc < 0 {
		return 0, false // a ramp down that ends before reaching i
	}
	// 2i / (r0 + sqrt(disc)) is the quadratic's root written so that it
	// neither divides by a (zero for a constant rate) nor cancels.
	t := 2 * float64(i) / (r0 + math.Sqrt(disc))
	if t >= D {
		return 0, false
	}
	at := time.Duration(math.Round(t * 1e9))
	return at, at < p.Duration
}

// schedule walks the send times of a list of phases in order. The zero
// value has nothing to send; it is not safe for concurrent use.
type schedule struct {
	phases []Phase
	phase  int           // current phase
	i      int           // next send within the current phase
	start  time.Duration // the current phase's start, from the run's start
}

func newSchedule(phases []Phase) *schedule { return &schedule{phases: phases} }

// next returns the next send's time from the run's start and its phase
// index, or false when every phase is done.
func (s *schedule) next() (at time.Duration, phase int, ok bool) {
	for s.phase < len(s.phases) {
		p := s.phases[s.phase]
		if t, ok := p.sendTime(s.i); ok {
			s.i++
			return s.start + t, s.phase, true
		}
		s.start += p.Duration
		s.phase++
		s.i = 0
	}
	return 0, 0, false
}

// phaseStarts returns each phase's start from the run's start, and the end
// of the last one.
func phaseStarts(phases []Phase) []time.Duration {
	starts := make([]time.Duration, len(phases)+1)
	for i, p := range phases {
		starts[i+1] = starts[i] + p.Duration
	}
	return starts
}
