package app

import (
	"bufio"
	"context"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/reqinfo"
)

// observing is what the outermost handler does for each request, from the
// configuration: the access log, and the Server-Timing header.
type observing struct {
	log          *slog.Logger // nil: no access log
	serverTiming bool
	traceparent  bool // generate one for a request without
}

// observe wraps h, the outermost handler of sluice's own: each request
// gets a reqinfo.Info, which the proxy (or, in library mode, the admission
// middleware's Observe) fills in. Its ID is a trusted peer's or trusted
// proxy's X-Request-Id (a request ID names a request across hops, as
// X-Forwarded-For names a client, so the same trust applies), else one
// sluice makes; the ID goes back on the response.
//
// A request that already carries an Info (made by Options.WrapFront, which
// reads it back once the request has been served) keeps it: one request
// has one Info, whoever made it. Only the trust decision is taken here, as
// WrapFront cannot know it: a trusted X-Request-Id replaces the ID it was
// given.
func (l *live) observe(h http.Handler, o observing) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(reqinfo.HeaderRequestID)
		if id != "" {
			if c := l.cls.Load(); !c.Trusted(r) && !c.TrustedProxy(r) {
				id = ""
			}
		}
		info := reqinfo.From(r.Context())
		if info == nil {
			var ctx context.Context
			ctx, info = reqinfo.New(r.Context(), time.Now(), id, r.Header.Get(reqinfo.HeaderTraceparent), o.traceparent)
			r = r.WithContext(ctx)
		} else if id != "" {
			info.SetID(id)
		}
		info.SetResponseHeader(w.Header())
		if o.log == nil && !o.serverTiming {
			h.ServeHTTP(w, r)
			return
		}
		rec := &recorder{ResponseWriter: w, info: info, timing: o.serverTiming}
		h.ServeHTTP(rec, r)
		if o.log != nil {
			logAccess(o.log, r, rec, info, time.Since(info.Start))
		}
	})
}

// logAccess writes the access log line of a request: one record, in the
// logger's format (-log text or json).
func logAccess(log *slog.Logger, r *http.Request, rec *recorder, info *reqinfo.Info, total time.Duration) {
	status := rec.status
	if status == 0 {
		status = http.StatusOK // nothing written: net/http answers 200
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int("status", status),
		slog.Int64("bytes", rec.bytes),
		slog.Float64("ms", millis(total)),
		slog.Float64("queue_ms", millis(info.QueueWait)),
		slog.Int("worker", info.Worker),
		slog.Float64("worker_ms", millis(info.WorkerTime)),
		slog.String("shed", info.Shed),
		slog.String("id", info.ID),
		slog.String("trace", info.TraceID),
		slog.String("remote", r.RemoteAddr),
	}
	log.LogAttrs(r.Context(), slog.LevelInfo, "access", attrs...)
}

// millis is d in milliseconds, to the microsecond.
func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// recorder notes a response's status and size for the access log, and
// adds Server-Timing to its header when asked.
type recorder struct {
	http.ResponseWriter
	info   *reqinfo.Info
	timing bool
	status int // the final status; 0 until written
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		r.status = code
		if r.timing {
			r.Header()[reqinfo.HeaderServerTiming] = []string{string(r.info.AppendServerTiming(make([]byte, 0, 48)))}
		}
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.ResponseWriter.Write(p)
	r.bytes += int64(n)
	return n, err
}

// Hijack takes the connection for a protocol switch, which the proxy
// makes only once the worker has answered 101: the status logged.
func (r *recorder) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(r.ResponseWriter).Hijack()
	if err == nil && r.status == 0 {
		r.status = http.StatusSwitchingProtocols
	}
	return c, brw, err
}

// Unwrap lets http.ResponseController reach the connection's Flush and
// deadlines.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// observeAdmission notes in the request's Info how it left the queue, in
// library mode: what the proxy notes in front mode.
func observeAdmission(r *http.Request, queued time.Time, wait time.Duration, err error) {
	if info := reqinfo.From(r.Context()); info != nil {
		info.Queued, info.QueueWait = queued, wait
		if reason, ok := admission.ShedReason(err); ok {
			info.Shed = reason.String()
		}
	}
}
