package supervisor

import "time"

// maxCrashLoopPause bounds the pause of restarts after the crash-loop guard
// trips, however often it trips in a row.
const maxCrashLoopPause = 10 * time.Minute

// tripLocked starts a crash-loop pause at now and returns its length: the
// guard's window for the first trip, doubling for each trip that follows
// the end of the last pause by less than two windows (the restarted workers
// crash-looped again), up to maxCrashLoopPause. Restarts wait for the end
// of the pause; then the guard re-arms by itself and every empty slot is
// restarted. REQUIRES s.mu held.
func (s *Supervisor) tripLocked(now time.Time) time.Duration {
	window := s.opts.CrashLoopWindow
	if s.trips > 0 && now.Sub(s.rearmAt) >= 2*window {
		s.trips = 0 // the pool ran well since the last pause: start over
	}
	pause := max(window, time.Second)
	for i := 0; i < s.trips && pause < maxCrashLoopPause; i++ {
		pause *= 2
	}
	pause = min(pause, max(maxCrashLoopPause, window))
	s.trips++
	s.crashLoop, s.rearmAt = true, now.Add(pause)
	return pause
}
