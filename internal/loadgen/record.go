package loadgen

import (
	"sync"
	"time"
)

// Error kinds that are not HTTP statuses.
const (
	KindTimeout          = "timeout"           // the attempt outlived the client's patience
	KindConnError        = "conn-error"        // dial, write or read failed
	KindNotLoopback      = "not-loopback"      // LoopbackOnly refused the resolved address
	KindCanceled         = "canceled"          // the run was cancelled mid-attempt
	KindGeneratorDropped = "generator-dropped" // MaxOutstanding was hit; never sent
)

// result is the fate of one logical request.
type result struct {
	at       time.Duration // scheduled send, from the run's start
	phase    int
	classes  []int // indices into the recorder's classes
	dropped  bool  // never sent: the outstanding cap was hit
	attempts int
	failed   []string // kind of each failed attempt, in order
	ok       bool
	latency  time.Duration // scheduled send to the successful response's end
}

// tally accumulates results. Not safe for concurrent use.
type tally struct {
	requests, attempts, successes, failures int64
	// delivered counts successes whose response ended within the tally's
	// window (the phase's, the run's), whenever they were sent: counted
	// by recorder.record, not by add.
	delivered int64
	errors    map[string]int64
	hist      Histogram
}

func (t *tally) add(r *result) {
	t.requests++
	t.attempts += int64(r.attempts)
	switch {
	case r.ok:
		t.successes++
		t.hist.Record(r.latency)
	case !r.dropped:
		t.failures++
	}
	if r.dropped {
		t.addError(KindGeneratorDropped)
	}
	for _, k := range r.failed {
		t.addError(k)
	}
}

func (t *tally) addError(kind string) {
	if t.errors == nil {
		t.errors = make(map[string]int64)
	}
	t.errors[kind]++
}

// errorCount returns the failed attempts and generator drops.
func (t *tally) errorCount() int64 {
	var n int64
	for _, c := range t.errors {
		n += c
	}
	return n
}

// recorder gathers every result of a run, attributed to the scheduled
// send time of its logical request: the run as a whole, its phase, each
// class it belongs to, and its time-series bucket. A second, short-lived
// window feeds the progress line. Safe for concurrent use.
type recorder struct {
	bucket time.Duration
	starts []time.Duration // of each phase, and the end of the last

	mu struct {
		sync.Mutex
		total   tally
		phases  []tally
		classes []tally
		series  []tally
		window  tally // since the progress line last looked
		offered int64 // sends scheduled since the progress line last looked
	}
}

// newRecorder returns a recorder for phases starting at starts (and ending
// at the next start; the last element is the end of the last phase).
func newRecorder(starts []time.Duration, classes int, bucket time.Duration) *recorder {
	phases := len(starts) - 1
	r := &recorder{bucket: bucket, starts: starts}
	r.mu.phases = make([]tally, phases)
	r.mu.classes = make([]tally, classes)
	return r
}

// scheduled counts a send as due, for the progress line.
func (r *recorder) scheduled() {
	r.mu.Lock()
	r.mu.offered++
	r.mu.Unlock()
}

func (r *recorder) record(res *result) {
	b := int(res.at / r.bucket)
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.mu.series) <= b {
		r.mu.series = append(r.mu.series, tally{})
	}
	r.mu.total.add(res)
	r.mu.phases[res.phase].add(res)
	if res.ok {
		// Delivered: within the window its response ended in.
		end := res.at + res.latency
		for i := range r.mu.phases {
			if end >= r.starts[i] && end < r.starts[i+1] {
				r.mu.phases[i].delivered++
				r.mu.total.delivered++
				break
			}
		}
	}
	r.mu.series[b].add(res)
	r.mu.window.add(res)
	for _, c := range res.classes {
		r.mu.classes[c].add(res)
	}
}

// takeWindow returns what was recorded since the last call, and resets it.
func (r *recorder) takeWindow() (w tally, offered int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	w, offered = r.mu.window, r.mu.offered
	r.mu.window, r.mu.offered = tally{}, 0
	return w, offered
}
