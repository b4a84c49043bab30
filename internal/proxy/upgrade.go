package proxy

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/textproto"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/upstream"
)

// Upgrades. A request that asks to switch protocols (WebSocket, say) is
// passed through to a worker on a connection of its own, and the two
// connections are then relayed both ways until either side closes. An
// upgraded connection may stay open for hours: it takes no render slot and
// is not admitted by the Controller. Upgrades have their own bound
// instead (Options.MaxUpgrades), past which they are answered 503; they
// are counted apart (Stats.Upgrades). The worker is the routable one with
// the fewest upgraded connections, then the fewest requests in flight.
//
// Upgraded connections outlive the HTTP server's drain, which neither
// waits for nor closes hijacked connections: CloseUpgrades closes them,
// and is meant to be called once the drain is over (every request has
// finished or was cut at the shutdown timeout), before the workers stop.
// A worker that is drained and removed (a rolling restart) keeps its
// upgraded connections until it exits: its clients then reconnect to
// another worker, as WebSocket clients must anyway.

// DefaultMaxUpgrades bounds the upgraded connections open at once when
// Options.MaxUpgrades is zero.
const DefaultMaxUpgrades = 1024

// upgradeTimeout bounds the wait for the worker's answer to an upgrade:
// the handshake is short, whatever the connection's life after it.
const upgradeTimeout = 30 * time.Second

// upgrades tracks the upgraded connections. Lock order: pool.mu, then
// upgrades.mu.
type upgrades struct {
	mu       sync.Mutex
	open     map[*upgraded]struct{}
	perEp    map[*endpoint]int
	reserved int // upgrades being set up or relayed
	total    uint64
	// refused counts upgrades answered 503 at the bound.
	refused uint64
	closed  bool // CloseUpgrades was called: no new ones
}

// upgraded is one relayed pair of connections; each reader holds what
// was read past the handshake on its side.
type upgraded struct {
	client, worker net.Conn
	fromClient     io.Reader
	fromWorker     io.Reader
	once           sync.Once
}

func (u *upgraded) close() {
	u.once.Do(func() {
		u.client.Close()
		u.worker.Close()
	})
}

// relay copies both ways until either side closes or fails, then closes
// both: a half-closed WebSocket has nothing left to say.
func (u *upgraded) relay() {
	done := make(chan struct{}, 2)
	cp := func(dst net.Conn, src io.Reader) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go cp(u.worker, u.fromClient)
	go cp(u.client, u.fromWorker)
	<-done
	u.close()
	<-done
}

// isUpgrade reports whether r asks to switch protocols (RFC 9110 7.8):
// an HTTP/1.1 request with an Upgrade header that its Connection header
// names. (HTTP/2 has no Upgrade; its extended CONNECT is refused.) An
// upgrade to h2c is not passed on: HTTP/2 ends at sluice, and h2c
// upgrade smuggling (a request the worker would read as HTTP/2 behind
// the proxy's back) is refused by treating the headers as hop-by-hop.
func isUpgrade(r *http.Request) bool {
	if r.ProtoMajor != 1 || r.ProtoMinor < 1 || len(r.Header["Upgrade"]) == 0 {
		return false
	}
	for _, v := range r.Header["Upgrade"] {
		for proto := range strings.SplitSeq(v, ",") {
			if name, _, _ := strings.Cut(textproto.TrimString(proto), "/"); strings.EqualFold(name, "h2c") {
				return false
			}
		}
	}
	for _, v := range r.Header["Connection"] {
		for name := range strings.SplitSeq(v, ",") {
			if strings.EqualFold(textproto.TrimString(name), "upgrade") {
				return true
			}
		}
	}
	return false
}

var errTooManyUpgrades = errors.New("proxy: too many upgraded connections")

// serveUpgrade passes r through to a worker and, when the worker agrees
// (101), relays both connections until either side closes.
func (p *Proxy) serveUpgrade(w http.ResponseWriter, r *http.Request) {
	if r.ContentLength != 0 {
		// A body before the switch has no framing the relay could keep.
		w.Header().Set("Connection", "close")
		plain(w, http.StatusBadRequest, "Bad Request: an upgrade request may not have a body\n")
		return
	}
	ep, err := p.reserveUpgrade(time.Now())
	if err != nil {
		w.Header().Set("Retry-After", "1")
		if errors.Is(err, errTooManyUpgrades) {
			plain(w, http.StatusServiceUnavailable, "Service Unavailable: too many upgraded connections\n")
		} else {
			p.noWorker.Add(1)
			plain(w, http.StatusServiceUnavailable, "No Worker Available\n")
		}
		return
	}
	defer p.unreserveUpgrade(ep)
	u, err := p.upgradeTo(w, r, ep)
	if err != nil {
		p.badGateway.Add(1)
		p.log.Warn("proxy: upgrade failed", slog.Int("worker", ep.ID), slog.String("path", r.URL.Path), slog.Any("error", err))
		plain(w, http.StatusBadGateway, "Bad Gateway\n")
		return
	}
	if u == nil {
		return // the worker declined, and its answer was relayed
	}
	p.up.mu.Lock()
	closed := p.up.closed
	if !closed {
		p.up.open[u] = struct{}{}
		p.up.total++
	}
	p.up.mu.Unlock()
	if closed {
		u.close()
		return
	}
	u.relay()
	p.up.mu.Lock()
	delete(p.up.open, u)
	p.up.mu.Unlock()
}

// reserveUpgrade counts an upgrade against the bound and its worker: the
// routable one with the fewest upgraded connections, then the lowest
// share of its slots in use.
func (p *Proxy) reserveUpgrade(now time.Time) (*endpoint, error) {
	p.pool.mu.Lock()
	defer p.pool.mu.Unlock()
	p.up.mu.Lock()
	defer p.up.mu.Unlock()
	if p.up.closed {
		return nil, errNoWorker
	}
	if p.up.reserved >= p.o.MaxUpgrades {
		p.up.refused++
		return nil, errTooManyUpgrades
	}
	var best *endpoint
	for _, e := range p.pool.eps {
		if !e.routable || e.hung || now.Before(e.quarantine) {
			continue
		}
		if best == nil {
			best = e
			continue
		}
		if ne, nb := p.up.perEp[e], p.up.perEp[best]; ne != nb {
			if ne < nb {
				best = e
			}
			continue
		}
		if p.pool.better(e, best, now) {
			best = e
		}
	}
	if best == nil {
		return nil, errNoWorker
	}
	p.up.reserved++
	p.up.perEp[best]++
	return best, nil
}

func (p *Proxy) unreserveUpgrade(ep *endpoint) {
	p.up.mu.Lock()
	p.up.reserved--
	if p.up.perEp[ep]--; p.up.perEp[ep] <= 0 {
		delete(p.up.perEp, ep)
	}
	p.up.mu.Unlock()
}

// upgradeTo sends r to ep on a new connection. When ep switches protocols
// it returns the pair to relay, the 101 relayed to the client; when ep
// declines, it relays ep's answer and returns nil, nil.
func (p *Proxy) upgradeTo(w http.ResponseWriter, r *http.Request, ep *endpoint) (*upgraded, error) {
	ctx, cancel := context.WithTimeout(r.Context(), p.o.DialTimeout)
	nc, err := p.o.Dial(ctx, ep.Network, ep.Addr)
	cancel()
	if err != nil {
		p.dialFailures.Add(1)
		p.pool.unreachable(ep, time.Now())
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			nc.Close()
		}
	}()
	out := p.upgradeRequest(r, ep)
	_ = nc.SetDeadline(time.Now().Add(upgradeTimeout))
	if err := upstream.WriteRequest(nc, out); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(nc, 4<<10)
	resp, err := http.ReadResponse(br, out)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusSwitchingProtocols {
		// Declined (a 400 or a 426, say): its answer is relayed as any.
		defer resp.Body.Close()
		copyResponseHeader(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
		return nil, nil
	}
	_ = nc.SetDeadline(time.Time{})
	cc, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, err
	}
	// The server's read and write deadlines were for one request: the
	// connection now lives as long as either side wants it.
	_ = cc.SetDeadline(time.Time{})
	// The worker's 101 goes out whole, its Connection and Upgrade included:
	// they are the switch itself.
	_, _ = brw.WriteString("HTTP/1.1 101 Switching Protocols\r\n")
	_ = resp.Header.Write(brw)
	_, _ = brw.WriteString("\r\n")
	if err := brw.Flush(); err != nil {
		cc.Close()
		return nil, nil
	}
	ok = true
	return &upgraded{client: cc, worker: nc, fromClient: brw.Reader, fromWorker: br}, nil
}

// upgradeRequest is the request sent to ep for r: r's end-to-end headers
// as for any request (outgoingHeader), and the switch asked for.
func (p *Proxy) upgradeRequest(r *http.Request, ep *endpoint) *http.Request {
	var trust Trust
	if p.o.Trust != nil {
		trust = p.o.Trust(r)
	}
	var req admission.Request
	if p.o.Classify != nil {
		req = p.o.Classify(r)
	}
	hdr := outgoingHeader(r, req, trust, p.o.UnderscoresInHeaders)
	if info := reqinfo.From(r.Context()); info != nil {
		// The same request ID and arrival time as any request's.
		info.SetRequestHeaders(hdr)
		info.Worker = ep.ID
	}
	hdr["Connection"] = []string{"Upgrade"}
	hdr["Upgrade"] = r.Header["Upgrade"]
	out := &http.Request{Method: r.Method, URL: &url.URL{Path: r.URL.Path, RawPath: r.URL.RawPath, RawQuery: r.URL.RawQuery},
		Header: hdr, Host: r.Host, Body: http.NoBody}
	if out.Host == "" {
		out.Host = ep.host
	}
	return out
}

// CloseUpgrades closes every upgraded connection and refuses new ones
// (503): for the end of the drain, before the workers stop. It returns
// how many it closed.
func (p *Proxy) CloseUpgrades() int {
	p.up.mu.Lock()
	p.up.closed = true
	open := make([]*upgraded, 0, len(p.up.open))
	for u := range p.up.open {
		open = append(open, u)
	}
	p.up.mu.Unlock()
	for _, u := range open {
		u.close()
	}
	return len(open)
}
