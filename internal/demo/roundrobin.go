package demo

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"
)

// RoundRobin is the baseline front without admission control: each request
// goes to the next upstream in turn, at once, whatever the upstream is
// doing. No limit, no queue, no buffering policy: what a plain reverse proxy
// (or Node's cluster module) does. A client that gives up cancels its
// upstream request, which closes the connection; a worker that cannot
// cancel a render goes on rendering for nobody.
//
// Create one with NewRoundRobin. Safe for concurrent use.
type RoundRobin struct {
	next    atomic.Uint64
	proxies []*httputil.ReverseProxy
}

// NewRoundRobin returns a RoundRobin over the upstreams' host:port
// addresses (at least one; an address that is not host:port is an error).
func NewRoundRobin(addrs []string) (*RoundRobin, error) {
	if len(addrs) == 0 {
		return nil, errors.New("demo: round robin needs at least one upstream")
	}
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     4 * time.Second,
	}
	rr := &RoundRobin{}
	for _, a := range addrs {
		if _, _, err := net.SplitHostPort(a); err != nil {
			return nil, fmt.Errorf("demo: round robin upstream %q: %w", a, err)
		}
		u, err := url.Parse("http://" + a)
		if err != nil {
			return nil, err
		}
		p := httputil.NewSingleHostReverseProxy(u)
		p.Transport = tr
		p.ErrorLog = log.New(io.Discard, "", 0)
		p.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		}
		rr.proxies = append(rr.proxies, p)
	}
	return rr, nil
}

// ServeHTTP sends r to the next upstream.
func (rr *RoundRobin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	i := (rr.next.Add(1) - 1) % uint64(len(rr.proxies))
	rr.proxies[i].ServeHTTP(w, r)
}
