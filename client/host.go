package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"
)

// host is the per-destination state: adaptive throttle and circuit breaker
// under one mutex.
type host struct {
	name string
	mu   struct {
		sync.Mutex
		th   throttle
		br   breaker
		last time.Time // last admit, for sweeping idle hosts
	}
}

// outcome is what an attempt's result means to the throttle and breaker.
type outcome struct {
	accepted bool // the throttle counts an accept
	failed   bool // the breaker counts a failure
	ignored  bool // the caller gave up: not evidence about the host
}

// judge classifies an attempt's result. A host that sheds (503 with
// Retry-After, 429) is alive and answering: that is the throttle's
// business, not a failure for the breaker. A host that cannot be reached,
// times out, or answers through a gateway that cannot reach it (502, 504,
// 503 without Retry-After) is failing.
func judge(ctx context.Context, resp *http.Response, err error) outcome {
	if err != nil {
		if errors.Is(err, context.Canceled) && ctx.Err() == context.Canceled {
			return outcome{accepted: true, ignored: true}
		}
		return outcome{failed: true}
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests:
		return outcome{}
	case http.StatusServiceUnavailable:
		_, ok := resp.Header["Retry-After"]
		return outcome{failed: !ok}
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return outcome{accepted: true, failed: true}
	}
	return outcome{accepted: true}
}

// admit decides at now whether an attempt may be sent: the breaker first
// (an open breaker's rejections are not requests to the host, so they do
// not feed the throttle), then the throttle. A half-open breaker's probes
// skip the throttle, whose counts describe the outage: throttled probes
// would keep the breaker half-open, and the host unused, for minutes.
func (h *host) admit(now time.Time, rnd float64) (ticket, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.mu.last = now
	tk, ok := h.mu.br.allow(now)
	if !ok {
		return ticket{}, fmt.Errorf("%w: host %s", ErrCircuitOpen, h.name)
	}
	if tk.probe {
		h.mu.th.probe(now)
		return tk, nil
	}
	if ok, p := h.mu.th.allow(now, rnd); !ok {
		h.mu.br.cancel(tk)
		return ticket{}, fmt.Errorf("%w: host %s is refusing requests, %.0f%% rejected locally", ErrThrottled, h.name, p*100)
	}
	return tk, nil
}

// done reports an attempt's result and returns the breaker's state before
// and after. A breaker that closes resets the throttle: the host has
// recovered, and the refusals counted during its outage would otherwise
// hold the client back for another window.
func (h *host) done(now time.Time, tk ticket, o outcome) (from, to BreakerState) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if o.accepted {
		h.mu.th.accepted(now)
	}
	from = h.mu.br.st
	if o.ignored {
		h.mu.br.cancel(tk)
		return from, from
	}
	to = h.mu.br.record(now, tk, o.failed)
	if to == BreakerClosed && from != BreakerClosed {
		h.mu.th.reset()
	}
	return from, to
}

func (h *host) stats(now time.Time) HostStats {
	h.mu.Lock()
	defer h.mu.Unlock()
	requests, accepts := h.mu.th.win.sum(now)
	return HostStats{
		Breaker:           h.mu.br.state(now),
		Requests:          requests,
		Accepts:           accepts,
		RejectProbability: h.mu.th.probability(now),
	}
}

// idle reports whether h has not been asked for since after before now and
// has no probe in flight. Forgetting such a host loses nothing that matters:
// its windows are empty and its breaker's cooldown has passed.
func (h *host) idle(now time.Time, after time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return now.Sub(h.mu.last) > after && h.mu.br.probing == 0
}

func hostKey(req *http.Request) string {
	if req.URL == nil {
		return ""
	}
	return strings.ToLower(req.URL.Host)
}
