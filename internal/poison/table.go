package poison

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults applied by New to zero fields of Options.
const (
	DefaultAfter         = 2
	DefaultWindow        = 10 * time.Minute
	DefaultQuarantine    = time.Minute
	DefaultMaxQuarantine = time.Hour
	DefaultMaxShapes     = 1024
)

// Options configures a Table. The zero value is usable: New replaces each
// zero field with its default.
type Options struct {
	// After is how many worker deaths a shape must have been in flight at,
	// within Window, to be quarantined. Zero means DefaultAfter; 1
	// quarantines on the first death.
	After int
	// Window is how long a death counts against a shape, and how long a
	// shape let out of quarantine stays on parole. Zero means
	// DefaultWindow.
	Window time.Duration
	// Quarantine is how long a shape is refused the first time; each
	// quarantine that follows before it is forgiven lasts twice as long as
	// the last, up to MaxQuarantine. Zero means DefaultQuarantine.
	Quarantine time.Duration
	// MaxQuarantine bounds a quarantine. Zero means DefaultMaxQuarantine,
	// or Quarantine when that is longer.
	MaxQuarantine time.Duration
	// MaxShapes bounds the shapes remembered at once. Zero means
	// DefaultMaxShapes.
	MaxShapes int
}

func (o Options) withDefaults() Options {
	if o.After == 0 {
		o.After = DefaultAfter
	}
	if o.Window == 0 {
		o.Window = DefaultWindow
	}
	if o.Quarantine == 0 {
		o.Quarantine = DefaultQuarantine
	}
	if o.MaxQuarantine == 0 {
		o.MaxQuarantine = max(DefaultMaxQuarantine, o.Quarantine)
	}
	if o.MaxShapes == 0 {
		o.MaxShapes = DefaultMaxShapes
	}
	return o
}

// Validate reports every field of o that is wrong; nil means New will
// accept o.
func (o Options) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("poison: "+format, args...))
	}
	if o.After < 0 {
		bad("Options.After = %d: must be >= 0 (0 means %d)", o.After, DefaultAfter)
	}
	if o.MaxShapes < 0 {
		bad("Options.MaxShapes = %d: must be >= 0 (0 means %d)", o.MaxShapes, DefaultMaxShapes)
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"Window", o.Window}, {"Quarantine", o.Quarantine}, {"MaxQuarantine", o.MaxQuarantine}} {
		if d.v < 0 {
			bad("Options.%s = %v: must be >= 0 (0 means the default)", d.name, d.v)
		}
	}
	if o.MaxQuarantine > 0 && o.MaxQuarantine < o.Quarantine {
		bad("Options.MaxQuarantine = %v: must be >= Quarantine (%v)", o.MaxQuarantine, o.Quarantine)
	}
	return errors.Join(errs...)
}

// Outcome is how a request that Admit let through ended.
type Outcome uint8

const (
	// NotSent: it never reached a worker (its client left, it was shed or
	// found no worker).
	NotSent Outcome = iota
	// Served: a worker answered it.
	Served
	// Failed: it reached a worker, which failed before answering.
	Failed
)

// Request is a request in flight on a worker that died.
type Request struct {
	Method, Path string
}

// Ticket is what Admit let through; Done reports how it ended. The zero
// value is a ticket of no request.
type Ticket struct {
	method, path string
	probe        [2]uint64 // the probation generation each shape is probed in; 0: not a probe
}

// Probe reports whether tk's request is the probe of a shape on
// probation: its outcome decides the shape's fate.
func (tk Ticket) Probe() bool { return tk.probe != [2]uint64{} }

// Table is the memory of the shapes that killed workers. Create it with
// New; all methods are safe for concurrent use, and each takes the time
// as a parameter. Admit and Done cost one atomic load while the table is
// empty.
type Table struct {
	o Options

	size        atomic.Int32 // len(shapes), read without mu
	sheds       atomic.Uint64
	quarantines atomic.Uint64

	mu        sync.Mutex
	shapes    map[string]*entry
	nextPurge time.Time
}

// entry is one shape's record; guarded by Table.mu.
type entry struct {
	deaths  []time.Time // within Window, oldest first, at most After
	served  int         // answers since deaths[0]
	level   int         // quarantines not yet forgiven: the next lasts Quarantine << level
	until   time.Time   // end of the quarantine; then probation. Zero: neither
	probe   uint64      // the probe in flight (its generation); 0: none
	gen     uint64
	parole  time.Time // a good probe's parole ends then
	touched time.Time // last death or request, for eviction
}

func (e *entry) quarantined(now time.Time) bool { return !e.until.IsZero() && now.Before(e.until) }
func (e *entry) onProbation(now time.Time) bool { return !e.until.IsZero() && !now.Before(e.until) }

// New returns an empty Table.
func New(o Options) (*Table, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return &Table{o: o.withDefaults(), shapes: make(map[string]*entry)}, nil
}

// Empty reports whether the table remembers no shape: Done then has
// nothing to learn but a probe's outcome.
func (t *Table) Empty() bool { return t.size.Load() == 0 }

// Admit reports whether a request of method and path may go to a worker,
// and returns its ticket, for Done. It refuses a request whose shape is
// quarantined, or on probation with its probe in flight; a request let
// through a shape on probation is that shape's probe.
func (t *Table) Admit(now time.Time, method, path string) (Ticket, bool) {
	tk := Ticket{method: method, path: path}
	if t.size.Load() == 0 {
		return tk, true
	}
	s := shapesOf(method, path)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.purgeLocked(now, false)
	es := [2]*entry{t.shapes[s.fine], nil}
	if s.coarse != "" {
		es[1] = t.shapes[s.coarse]
	}
	for _, e := range es {
		if e != nil && (e.quarantined(now) || e.onProbation(now) && e.probe != 0) {
			e.touched = now
			t.sheds.Add(1)
			return Ticket{}, false
		}
	}
	for i, e := range es {
		if e != nil && e.onProbation(now) {
			e.gen++
			e.probe, tk.probe[i] = e.gen, e.gen
			e.touched = now
		}
	}
	return tk, true
}

// RetryAfter is how long a request of method and path that Admit refused
// at now would be refused still: the rest of its shape's quarantine, or,
// on probation while another request probes, one second.
func (t *Table) RetryAfter(now time.Time, method, path string) time.Duration {
	s := shapesOf(method, path)
	t.mu.Lock()
	defer t.mu.Unlock()
	var d time.Duration
	for _, k := range []string{s.fine, s.coarse} {
		if e := t.shapes[k]; k != "" && e != nil && !e.until.IsZero() {
			d = max(d, e.until.Sub(now), time.Second)
		}
	}
	return d
}

// Done reports how the request of tk ended. It must be called once for
// each ticket Admit let through, and at most once. A probe served
// puts its shape on parole; a probe that failed at its worker sends it
// back into quarantine; one not sent lets the next request probe.
func (t *Table) Done(now time.Time, tk Ticket, o Outcome) {
	if t.size.Load() == 0 || o != Served && tk.probe == [2]uint64{} {
		return
	}
	s := shapesOf(tk.method, tk.path)
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, key := range [2]string{s.fine, s.coarse} {
		e := t.shapes[key]
		if key == "" || e == nil {
			continue
		}
		if gen := tk.probe[i]; gen != 0 && e.probe == gen {
			e.probe = 0
			switch o {
			case Served:
				e.until, e.parole = time.Time{}, now.Add(t.o.Window)
				e.deaths, e.served = e.deaths[:0], 0
			case Failed:
				t.quarantineLocked(e, now)
			}
			continue
		}
		if o == Served && len(e.deaths) > 0 {
			e.served++
		}
	}
}

// Died records the death of a worker that held reqs (sent to it, not
// answered). Each shape among them counts the death once.
func (t *Table) Died(now time.Time, reqs []Request) {
	if len(reqs) == 0 {
		return
	}
	seen := make(map[string]bool, 2*len(reqs))
	t.mu.Lock()
	defer t.mu.Unlock()
	t.purgeLocked(now, true)
	for _, r := range reqs {
		s := shapesOf(r.Method, r.Path)
		for _, key := range [2]string{s.fine, s.coarse} {
			if key == "" || seen[key] {
				continue
			}
			seen[key] = true
			t.deathLocked(t.entryLocked(key, now), now)
		}
	}
}

// deathLocked counts a death against e. REQUIRES t.mu held.
func (t *Table) deathLocked(e *entry, now time.Time) {
	e.touched = now
	switch {
	case e.quarantined(now):
		// Sent before the quarantine began: it changes nothing.
	case e.onProbation(now), now.Before(e.parole):
		t.quarantineLocked(e, now)
	default:
		e.deaths = pruned(e.deaths, now.Add(-t.o.Window))
		if len(e.deaths) == 0 {
			e.served = 0
		}
		if len(e.deaths) == t.o.After {
			e.deaths = append(e.deaths[:0], e.deaths[1:]...)
		}
		e.deaths = append(e.deaths, now)
		if len(e.deaths) >= t.o.After && e.served < len(e.deaths) {
			t.quarantineLocked(e, now)
		}
	}
}

// quarantineLocked refuses e's shape from now, for twice as long as the
// last time it was. REQUIRES t.mu held.
func (t *Table) quarantineLocked(e *entry, now time.Time) {
	d := t.o.Quarantine
	for i := 0; i < e.level && d < t.o.MaxQuarantine; i++ {
		d *= 2
	}
	d = min(d, t.o.MaxQuarantine)
	e.until, e.parole = now.Add(d), time.Time{}
	e.level++
	e.deaths, e.served, e.probe = e.deaths[:0], 0, 0
	t.quarantines.Add(1)
}

// entryLocked returns key's entry, made (in place of the entry that
// matters least, at MaxShapes) if there was none. REQUIRES t.mu held.
func (t *Table) entryLocked(key string, now time.Time) *entry {
	if e := t.shapes[key]; e != nil {
		return e
	}
	if len(t.shapes) >= t.o.MaxShapes {
		delete(t.shapes, t.victimLocked())
	}
	e := &entry{touched: now}
	t.shapes[key] = e
	t.size.Store(int32(len(t.shapes)))
	return e
}

// victimLocked returns the key of the entry to forget: the one untouched
// longest among those neither quarantined nor on probation, else the one
// whose quarantine ends first. REQUIRES t.mu held.
func (t *Table) victimLocked() string {
	var key string
	var best *entry
	for k, e := range t.shapes {
		if best == nil || forgetFirst(e, best) {
			key, best = k, e
		}
	}
	return key
}

// forgetFirst reports whether a matters less than b: not refused (neither
// quarantined nor on probation) before refused; then untouched longer, or
// the quarantine that ends first.
func forgetFirst(a, b *entry) bool {
	if az, bz := a.until.IsZero(), b.until.IsZero(); az != bz {
		return az
	} else if az {
		return a.touched.Before(b.touched)
	}
	return a.until.Before(b.until)
}

// purgeLocked forgets the shapes that no longer count: no death within
// Window, neither quarantined nor on probation nor on parole; or on
// probation with no probe in flight and no request for Window since the
// quarantine ended (nobody asks for it any more). Unless forced, it runs
// at most once a second. REQUIRES t.mu held.
func (t *Table) purgeLocked(now time.Time, force bool) {
	if !force && now.Before(t.nextPurge) {
		return
	}
	t.nextPurge = now.Add(time.Second)
	since := now.Add(-t.o.Window)
	for k, e := range t.shapes {
		if e.onProbation(now) && e.probe == 0 && e.until.Before(since) && e.touched.Before(since) {
			delete(t.shapes, k)
			continue
		}
		if !e.until.IsZero() || now.Before(e.parole) {
			continue
		}
		if e.deaths = pruned(e.deaths, since); len(e.deaths) == 0 {
			delete(t.shapes, k)
		}
	}
	t.size.Store(int32(len(t.shapes)))
}

// pruned returns ts without the times before since.
func pruned(ts []time.Time, since time.Time) []time.Time {
	i := 0
	for i < len(ts) && ts[i].Before(since) {
		i++
	}
	return append(ts[:0], ts[i:]...)
}

// Stats is a snapshot of a Table.
type Stats struct {
	// Quarantined is the number of shapes refused now or on probation.
	Quarantined int `json:"quarantined"`
	// Tracked is the number of shapes remembered.
	Tracked int `json:"tracked"`
	// Quarantines counts the times a shape was quarantined.
	Quarantines uint64 `json:"quarantines"`
	// Sheds counts the requests refused.
	Sheds uint64 `json:"sheds"`
	// Shapes lists the quarantined shapes ("GET /boom"), at most 20.
	Shapes []string `json:"shapes,omitempty"`
}

// maxListed bounds Stats.Shapes.
const maxListed = 20

// Stats returns a snapshot at now.
func (t *Table) Stats(now time.Time) Stats {
	st := Stats{Sheds: t.sheds.Load(), Quarantines: t.quarantines.Load()}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.purgeLocked(now, false)
	st.Tracked = len(t.shapes)
	for k, e := range t.shapes {
		if !e.until.IsZero() {
			st.Quarantined++
			if len(st.Shapes) < maxListed {
				st.Shapes = append(st.Shapes, k)
			}
		}
	}
	slices.Sort(st.Shapes)
	return st
}
