package proxy

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/sluicehq/sluice/internal/upstream"
)

// The handler's side of an exchange: serve starts the worker side and
// waits for what it tells (await), then relay writes the response to the
// client as it comes.

// outcome is what await tells the handler to do.
type outcome uint8

const (
	outcomeRelay   outcome = iota // relay x's response
	outcomeFailed                 // nothing was relayed; the permit is the handler's again
	outcomeTimeout                // answer 504; the worker side keeps the slot until the worker answers
	outcomeGone                   // the client left; the worker side keeps the slot until the worker answers
)

// spent is a budget that ran out: await's zero budget.
var spent = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// serve runs x and waits for the handler's next step, as await. It runs
// x on the handler's goroutine (runInline) unless the request's body is
// written apart (a large one: on a runner from the start), and then
// awaits what is left, if anything.
// A client that left while x ran inline is told of as await would
// (outcomeGone), the response wasted.
func (x *exchange) serve(ctx context.Context, w http.ResponseWriter, budget time.Duration) outcome {
	if x.body != nil && x.body.n > upstream.SyncWriteMax {
		x.p.runs.start(x)
		return x.await(ctx, w, budget)
	}
	var wait time.Time
	if budget >= 0 {
		wait = x.start.Add(budget)
	}
	// A client that leaves frees the handler at once, as await would.
	x.call.BeginInline(wait)
	stop := context.AfterFunc(ctx, x.call.Interrupt)
	handedOff := x.runInline(w, wait)
	stop()
	if handedOff {
		if budget >= 0 {
			budget = max(time.Until(wait), 0) // what is left; 0: spent
		}
		return x.await(ctx, w, budget)
	}
	x.call.EndInline()
	if ctx.Err() != nil {
		x.mu.Lock()
		failed, served := x.failed, x.err == nil
		if !failed {
			x.abandonLocked()
		}
		x.mu.Unlock()
		if !failed {
			if served {
				x.p.wasted.Add(1)
			}
			return outcomeGone
		}
	}
	return x.await(ctx, w, budget)
}

// await waits for the handler's next step: the first batch of the response
// is ready, the exchange failed before it (the permit is then the
// handler's), the budget ran out (negative: none; zero: spent already),
// or the client left.
func (x *exchange) await(ctx context.Context, w http.ResponseWriter, budget time.Duration) outcome {
	var expired <-chan time.Time
	switch {
	case budget == 0:
		expired = spent
	case budget > 0:
		t := time.NewTimer(budget)
		defer t.Stop()
		expired = t.C
	}
	for {
		late, gone := false, false
		select {
		case <-x.notify:
		case <-expired:
			late = true
		case <-ctx.Done():
			gone = true
		}
		x.mu.Lock()
		if infos := x.infos; len(infos) > 0 {
			x.infos = nil
			x.mu.Unlock()
			writeInfos(w, infos) // before the final response, on this goroutine
			x.mu.Lock()
		}
		switch {
		case x.failed:
			x.mu.Unlock()
			return outcomeFailed
		case x.readyLocked():
			x.state = delivered
			x.mu.Unlock()
			return outcomeRelay
		case late || gone:
			x.abandonLocked()
			x.timedOut = late
			x.mu.Unlock()
			signal(x.space)
			if late {
				return outcomeTimeout
			}
			return outcomeGone
		}
		x.mu.Unlock()
	}
}

// relay writes x's response to the client as it arrives, flushing after
// each batch while more is to come.
func (p *Proxy) relay(w http.ResponseWriter, r *http.Request, x *exchange) {
	x.mu.Lock()
	resp := x.resp
	complete := x.done && x.err == nil
	total := x.pending
	trailers := x.trailers
	x.mu.Unlock()

	if complete && resp.StatusCode >= 500 && p.workerErrorFallback(w, r, x) {
		return
	}
	if complete {
		trailers = trailerNames(resp.Trailer) // all of them, announced or not
	}
	ok, stopHold := x.holdStream()
	if stopHold != nil {
		defer stopHold()
	}
	if !ok {
		p.refuseStream(w, x)
		return
	}
	copyResponseHeader(w.Header(), resp.Header)
	if len(trailers) > 0 {
		w.Header()["Trailer"] = trailers
	} else if complete && resp.ContentLength < 0 && bodyAllowed(r.Method, resp.StatusCode) {
		w.Header().Set("Content-Length", strconv.Itoa(total))
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	first := true
	for {
		n, done, err, werr := x.sendChunks(w)
		switch {
		case werr != nil:
			return // the client left: abandoned (a stream's worker connection closed)
		case done && (err == errStreamIdle || err == errStreamTimeout):
			// Cut at its bound: the client's connection is cut too, so
			// that the stream does not pass for a complete one.
			p.log.Info("proxy: stream cut at its bound", slog.Int("worker", x.ep.ID),
				slog.String("path", r.URL.Path), slog.Any("error", err))
			panic(http.ErrAbortHandler)
		case done && err != nil:
			// The worker failed mid-response: cut the client's connection
			// rather than let a truncated body pass for a complete one.
			p.aborted.Add(1)
			p.log.Warn("proxy: worker failed mid-response", slog.Int("worker", x.ep.ID),
				slog.String("path", r.URL.Path), slog.Any("error", err))
			panic(http.ErrAbortHandler)
		case done:
			writeTrailers(w, resp, trailers)
			return
		}
		if n > 0 || first {
			_ = rc.Flush()
		}
		first = false
		select {
		case <-x.notify:
		case <-r.Context().Done():
			x.mu.Lock()
			x.abandonLocked()
			x.mu.Unlock()
			signal(x.space)
			return
		}
	}
}

// sendChunks writes to the client what the worker has sent so far, and
// gives its memory back. It returns the bytes taken, whether the worker
// had finished when they were taken and with what error, and the client's
// write error (the exchange is then abandoned).
func (x *exchange) sendChunks(w http.ResponseWriter) (n int, done bool, err, werr error) {
	x.mu.Lock()
	chunks, done, err := x.chunks, x.done, x.err
	x.chunks = nil
	x.mu.Unlock()

	for _, c := range chunks {
		if werr == nil {
			_, werr = w.Write((*c.buf)[:c.n])
		}
		n += c.n
		x.p.dropBuf(c.buf)
	}
	x.mu.Lock()
	if werr != nil {
		x.abandonLocked()
	} else {
		x.pending -= n
	}
	x.mu.Unlock()
	signal(x.space)
	return n, done, err, werr
}

// bodyAllowed reports whether a response to method with status may carry
// a body (RFC 9110 6.4.1).
func bodyAllowed(method string, status int) bool {
	return method != http.MethodHead && status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
