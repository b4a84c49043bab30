package proxy

import (
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/poison"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// ShedPoison is the Sluice-Shed value of a request refused because
// requests of its shape killed workers (Options.Poison).
const ShedPoison = "poison"

var _ supervisor.Witness = (*Proxy)(nil)

// With Options.Poison set, each endpoint keeps the requests it holds, and
// those that failed after reaching it, so that when its worker dies
// (Died, from the supervisor) the table learns which shapes were in
// flight, and the supervisor whether a request, not the command, most
// likely killed it. Requests of a quarantined shape are refused before
// admission (admitShape), costing a map lookup only while the table
// remembers a shape.

// failedGrace is how long before a worker's death is reported a request
// that failed at it still counts as held at the death: its connection is
// cut the instant the process dies, and the supervisor reaps it moments
// later.
const failedGrace = 5 * time.Second

// heldRing is how many failed requests an endpoint remembers.
const heldRing = 8

// held is what an endpoint's worker holds; its zero value is ready.
type held struct {
	mu     sync.Mutex
	now    []*exchange // sent to it or being sent, not finished
	failed [heldRing]failedRequest
	next   int
}

// failedRequest is a request that reached the worker and failed there.
type failedRequest struct {
	req poison.Request
	at  time.Time
}

func (h *held) add(x *exchange) {
	h.mu.Lock()
	h.now = append(h.now, x)
	h.mu.Unlock()
}

// done forgets x, finished at now with err; one that failed after
// reaching the worker is remembered for failedGrace.
func (h *held) done(x *exchange, err error, now time.Time) {
	failed := err != nil && x.call.Sent()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, o := range h.now {
		if o == x {
			last := len(h.now) - 1
			h.now[i], h.now[last] = h.now[last], nil
			h.now = h.now[:last]
			break
		}
	}
	if failed {
		h.failed[h.next%heldRing] = failedRequest{poison.Request{Method: x.out.Method, Path: x.url.Path}, now}
		h.next++
	}
}

// suspects returns the requests the worker held at its death, reported at
// now: those sent to it and not finished, and those that failed there
// within failedGrace.
func (h *held) suspects(now time.Time) []poison.Request {
	h.mu.Lock()
	defer h.mu.Unlock()
	var reqs []poison.Request
	for _, x := range h.now {
		if x.call.Reached() { // one not yet on a connection cannot have killed it
			reqs = append(reqs, poison.Request{Method: x.out.Method, Path: x.url.Path})
		}
	}
	for _, f := range h.failed {
		if !f.at.IsZero() && now.Sub(f.at) <= failedGrace {
			reqs = append(reqs, f.req)
		}
	}
	return reqs
}

// shapeTicket is a request's ticket from Options.Poison; Done is called
// once, by whichever of the handler and the exchange learns an outcome
// first. The handler reports NotSent when it returns: a request answered
// 504, or whose client left, may still be running, and a probe's shape is
// then probed again meanwhile (its death, if it kills, still reaches the
// table by Died). The other way round, a ticket the handler left to its
// exchange could be lost, and a shape left on probation with a probe
// forever in flight would be refused for good.
type shapeTicket struct {
	t    *poison.Table
	tk   poison.Ticket
	done atomic.Bool
}

func (st *shapeTicket) finish(o poison.Outcome) {
	if st != nil && st.done.CompareAndSwap(false, true) {
		st.t.Done(time.Now(), st.tk, o)
	}
}

// admitShape asks Options.Poison whether r may go on. It returns the
// ticket to finish, nil when there is nothing to report (no table, or an
// empty one), and false, having answered r, when r is refused.
func (p *Proxy) admitShape(w http.ResponseWriter, r *http.Request) (*shapeTicket, bool) {
	t := p.o.Poison
	if t == nil || t.Empty() {
		// Nothing quarantined, nothing on probation: no clock read, no
		// ticket, as Admit would answer.
		return nil, true
	}
	tk, ok := t.Admit(time.Now(), r.Method, r.URL.Path)
	if !ok {
		if info := reqinfo.From(r.Context()); info != nil {
			info.Shed = ShedPoison
		}
		p.shedPoison(w, r, t.RetryAfter(time.Now(), r.Method, r.URL.Path))
		return nil, false
	}
	if t.Empty() && !tk.Probe() {
		return nil, true
	}
	return &shapeTicket{t: t, tk: tk}, true
}

// shedPoison answers a request of a quarantined shape: 503 with the rest
// of its quarantine as Retry-After, or its route's fallback for a shed.
func (p *Proxy) shedPoison(w http.ResponseWriter, r *http.Request, retry time.Duration) {
	decorate := func(h http.Header) {
		h.Set(admission.HeaderShed, ShedPoison)
		h.Set("Retry-After", strconv.FormatInt(int64((retry+time.Second-1)/time.Second), 10))
	}
	if p.fallback(w, r, "shed", decorate) {
		return
	}
	h := w.Header()
	decorate(h)
	h.Set("Cache-Control", "no-store")
	plain(w, http.StatusServiceUnavailable, "Service Unavailable: requests like this one have been crashing the server\n")
}

// hold records x, just dispatched with ticket st, as held by its worker.
func (p *Proxy) hold(x *exchange, st *shapeTicket) {
	if p.o.Poison == nil {
		return
	}
	x.shape = st
	x.ep.held.add(x)
}

// released is finish's report: x ended with err, at now.
func (x *exchange) released(err error, now time.Time) {
	if x.p.o.Poison == nil {
		return
	}
	x.ep.held.done(x, err, now)
	if !x.call.Sent() {
		return // the handler tries another worker, or reports NotSent
	}
	if err != nil {
		x.shape.finish(poison.Failed)
	} else {
		x.shape.finish(poison.Served)
	}
}

// Died implements supervisor.Witness: it tells Options.Poison which
// shapes worker id held when it died, and returns what the worker did.
// Without Options.Poison it reports nothing, and every death counts
// toward the supervisor's crash-loop guard.
func (p *Proxy) Died(id int) supervisor.Death {
	if p.o.Poison == nil {
		return supervisor.Death{}
	}
	p.pool.mu.Lock()
	e := p.pool.byID[id]
	p.pool.mu.Unlock()
	if e == nil {
		return supervisor.Death{}
	}
	now := time.Now()
	reqs := e.held.suspects(now)
	p.o.Poison.Died(now, reqs)
	if len(reqs) > 0 {
		p.log.Warn("proxy: worker died holding requests", slog.Int("worker", id), slog.Int("held", len(reqs)),
			slog.String("method", reqs[0].Method), slog.String("path", reqs[0].Path))
	}
	return supervisor.Death{Served: e.served.Load(), Held: len(reqs)}
}
