package client_test

import (
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"testing"

	"github.com/sluicehq/sluice/client"
)

// reply is what the fake base RoundTripper does for one attempt.
type reply struct {
	status     int
	retryAfter string
	err        error
	wrote      bool // call the trace's WroteHeaders before failing
}

var errRefused = errors.New("dial tcp 127.0.0.1:1: connect: connection refused")

func ok() reply               { return reply{status: 200} }
func shed(after string) reply { return reply{status: 503, retryAfter: after} }
func refused() reply          { return reply{err: errRefused} }

// seen is what the fake recorded of one attempt.
type seen struct {
	header http.Header
	body   string
}

// fakeBase is a scripted http.RoundTripper: attempt i gets replies[i], and
// the last reply repeats. It records what it was sent and every response
// body it handed out.
type fakeBase struct {
	mu      sync.Mutex
	replies []reply
	seen    []seen
	bodies  []*body
}

func (f *fakeBase) RoundTrip(req *http.Request) (*http.Response, error) {
	var b []byte
	if req.Body != nil {
		b, _ = io.ReadAll(req.Body)
		req.Body.Close()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = append(f.seen, seen{header: req.Header.Clone(), body: string(b)})
	r := f.replies[min(len(f.seen), len(f.replies))-1]
	if r.err != nil {
		if r.wrote {
			if tr := httptrace.ContextClientTrace(req.Context()); tr != nil && tr.WroteHeaders != nil {
				tr.WroteHeaders()
			}
		}
		return nil, r.err
	}
	resp := &http.Response{StatusCode: r.status, Header: http.Header{}, Request: req}
	if r.retryAfter != "" {
		resp.Header.Set("Retry-After", r.retryAfter)
	}
	bd := &body{Reader: strings.NewReader(http.StatusText(r.status))}
	f.bodies = append(f.bodies, bd)
	resp.Body = bd
	return resp, nil
}

func (f *fakeBase) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.seen)
}

// body records whether it was read to the end and closed.
type body struct {
	*strings.Reader
	mu     sync.Mutex
	closed bool
}

func (b *body) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}

func (b *body) drained() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.closed && b.Len() == 0
}

// closeTracker is a request body that records Close.
type closeTracker struct {
	io.Reader
	closed bool
}

func (c *closeTracker) Close() error { c.closed = true; return nil }

// constRand is a Rand that always returns v: jitter waits become exact.
func constRand(v float64) func() float64 { return func() float64 { return v } }

// seeded returns a deterministic Rand safe for concurrent use.
func seeded(seed uint64) func() float64 {
	var mu sync.Mutex
	r := rand.New(rand.NewPCG(seed, seed))
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return r.Float64()
	}
}

func mustNew(t testing.TB, base http.RoundTripper, o client.Options) *client.Transport {
	t.Helper()
	tr, err := client.New(base, o)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
