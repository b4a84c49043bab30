// Package demo is sluice's embedded demo application: a synthetic
// server-side-rendering page whose cost per request is set by the request
// (?cpu=<ms> of CPU work, default 5, and ?sleep=<ms> of I/O wait), served by
// `sluice serve` when nothing else is configured and by the single-threaded
// workers of `sluice demo`.
//
// The CPU work is a fixed amount of computation calibrated to take cpu ms
// on an idle core, not a wall-clock spin: two renders sharing one core both
// finish late, as two renders interleaved on one Node.js event loop do. That
// is the behaviour sluice exists to manage.
package demo

import (
	"fmt"
	"hash/fnv"
	"html"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Limits on what a request may ask for, so the demo cannot be made to spin
// for minutes.
const (
	DefaultCPU = 5 * time.Millisecond
	MaxCPU     = 10 * time.Second
	MaxSleep   = 60 * time.Second
)

// Work is a calibrated unit of CPU work. The zero value is not usable: use
// Calibrate or NewWork.
type Work struct {
	perMilli float64 // work units per millisecond of one idle core
}

// NewWork returns Work with a known calibration (units per millisecond),
// as measured by Calibrate in another process.
func NewWork(unitsPerMilli float64) Work { return Work{perMilli: unitsPerMilli} }

// UnitsPerMilli returns the calibration, to pass to other processes.
func (w Work) UnitsPerMilli() float64 { return w.perMilli }

// Calibrate measures how many work units one core does per millisecond,
// spending about d. It keeps the fastest of many rounds of a couple of
// milliseconds: on a machine that runs anything else, a round longer than
// the scheduler's time slice is almost always cut by another process, and
// its rate is that of a share of the core, not of the core. Calibrated on a
// busy machine from long rounds, every render would do a fraction of the
// work it is asked for.
func Calibrate(d time.Duration) Work { return calibrate(d, time.Now) }

// calibrationRound is the length of one round of Calibrate: well under
// the scheduler's time slice (a few ms), well over the clock's cost (tens
// of ns) and resolution.
const calibrationRound = 2 * time.Millisecond

// calibrate is Calibrate reading the clock from now.
func calibrate(d time.Duration, now func() time.Time) Work {
	const batch = 64 // units between two readings of the clock
	best := 0.0
	var sink uint64
	t := now()
	for end := t.Add(d); ; {
		start, units := t, 0
		for t.Sub(start) < calibrationRound {
			for i := range batch {
				sink += unit(units + i)
			}
			units += batch
			t = now()
		}
		if r := float64(units) / (float64(t.Sub(start)) / float64(time.Millisecond)); r > best {
			best = r
		}
		if !t.Before(end) {
			break
		}
	}
	_ = sink
	return Work{perMilli: best}
}

// Do performs d's worth of CPU work and returns a value that depends on it
// (so the compiler cannot drop it).
func (w Work) Do(d time.Duration) uint64 {
	n := int(w.perMilli * float64(d) / float64(time.Millisecond))
	var sink uint64
	for i := range n {
		sink += unit(i)
	}
	return sink
}

// unit is one unit of work: format and hash a row of markup, which is what
// a renderer spends its time on.
func unit(i int) uint64 {
	var buf [64]byte
	b := append(buf[:0], "<li class=\"row\">"...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, "</li>"...)
	h := fnv.New64a()
	h.Write(b)
	return h.Sum64()
}

// App is the demo page. Safe for concurrent use.
type App struct {
	Work Work
	// Name is shown on the page (e.g. "worker 3").
	Name string

	rendered atomic.Int64
	inflight atomic.Int64
	peak     atomic.Int64
	busy     atomic.Int64 // nanoseconds spent rendering, ever, summed over renders

	mu       sync.Mutex
	working  int           // renders doing their work now
	since    time.Time     // when working last became non-zero
	occupied time.Duration // while working was non-zero, ever, until since
}

// Stats is what an App has done.
type Stats struct {
	Rendered     int64 `json:"rendered"`
	Inflight     int64 `json:"inflight"`
	PeakInflight int64 `json:"peakInflight"`
	// BusyNs is the wall time during which at least one render was doing
	// its work, ever, in nanoseconds: the worker's CPU work, and whatever
	// time other processes took its CPU meanwhile.
	BusyNs int64 `json:"busyNs"`
}

// Stats returns the App's counters.
func (a *App) Stats() Stats {
	a.mu.Lock()
	busy := a.occupied
	if a.working > 0 {
		busy += time.Since(a.since)
	}
	a.mu.Unlock()
	return Stats{Rendered: a.rendered.Load(), Inflight: a.inflight.Load(), PeakInflight: a.peak.Load(), BusyNs: int64(busy)}
}

// work does a render's work, counting the time any render is doing it.
func (a *App) work(cpu time.Duration) uint64 {
	a.mu.Lock()
	if a.working == 0 {
		a.since = time.Now()
	}
	a.working++
	a.mu.Unlock()
	defer func() {
		a.mu.Lock()
		if a.working--; a.working == 0 {
			a.occupied += time.Since(a.since)
		}
		a.mu.Unlock()
	}()
	return a.Work.Do(cpu)
}

// ServeHTTP renders the page: ?cpu=<ms> of CPU work (default 5), then
// ?sleep=<ms> of waiting. Bad parameters get 400.
func (a *App) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cpu, err := msParam(r, "cpu", DefaultCPU, MaxCPU)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	sleep, err := msParam(r, "sleep", 0, MaxSleep)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	n := a.inflight.Add(1)
	defer a.inflight.Add(-1)
	for p := a.peak.Load(); n > p && !a.peak.CompareAndSwap(p, n); p = a.peak.Load() {
	}
	start := time.Now()
	sum := a.work(cpu)
	a.busy.Add(int64(time.Since(start)))
	if sleep > 0 {
		t := time.NewTimer(sleep)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	a.rendered.Add(1)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, "<!doctype html><html><head><title>sluice demo</title></head><body>"+
		"<h1>Rendered by %s</h1><p>%v of CPU work (checksum %x), %v of waiting, in %v.</p></body></html>\n",
		html.EscapeString(a.Name), cpu, sum&0xffff, sleep, time.Since(start).Round(time.Microsecond))
}

func msParam(r *http.Request, name string, def, maxV time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	ms, err := strconv.ParseFloat(v, 64)
	if err != nil || ms < 0 || ms != ms {
		return 0, fmt.Errorf("demo: %s=%q: want a non-negative number of milliseconds", name, v)
	}
	d := time.Duration(ms * float64(time.Millisecond))
	if d > maxV {
		return 0, fmt.Errorf("demo: %s=%q: at most %v", name, v, maxV)
	}
	return d, nil
}

// StatsHandler serves a's Stats as JSON.
func (a *App) StatsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s := a.Stats()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, fmt.Sprintf(`{"rendered":%d,"inflight":%d,"peakInflight":%d,"busyNs":%d}`+"\n", s.Rendered, s.Inflight, s.PeakInflight, s.BusyNs))
	})
}
