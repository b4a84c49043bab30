package client

import "time"

// window counts two things (a total and a subset of it: accepts, retries,
// failures) over a sliding period, in buckets. The count is exact to one
// bucket: an event leaves the window between period-width and period after
// it happened. Time is a parameter; the zero value is unusable (see
// newWindow). Not safe for concurrent use.
type window struct {
	width   int64 // bucket width in nanoseconds
	buckets []bucket
}

type bucket struct {
	epoch       int64 // now / width when the bucket was last reset
	total, hits int64
}

func newWindow(period time.Duration, n int) window {
	width := int64(period) / int64(n)
	if width < 1 {
		width = 1
	}
	return window{width: width, buckets: make([]bucket, n)}
}

// period returns the span the window covers.
func (w *window) period() time.Duration {
	return time.Duration(w.width * int64(len(w.buckets)))
}

// add counts total events of which hits are of the kind watched.
func (w *window) add(now time.Time, total, hits int64) {
	e := now.UnixNano() / w.width
	b := &w.buckets[int(uint64(e)%uint64(len(w.buckets)))]
	if b.epoch != e {
		*b = bucket{epoch: e}
	}
	b.total += total
	b.hits += hits
}

// sum returns the counts of the buckets still inside the window at now.
func (w *window) sum(now time.Time) (total, hits int64) {
	e := now.UnixNano() / w.width
	oldest := e - int64(len(w.buckets)) + 1
	for i := range w.buckets {
		if b := &w.buckets[i]; b.epoch >= oldest && b.epoch <= e {
			total += b.total
			hits += b.hits
		}
	}
	return total, hits
}

// reset forgets everything counted.
func (w *window) reset() { clear(w.buckets) }
