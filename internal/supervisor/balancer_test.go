package supervisor_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/supervisor"
)

// testBalancer stands in for the proxy in the integration tests: it
// dispatches to endpoints with a free slot, drains properly, and reports
// every call on events.
type testBalancer struct {
	events chan string
	seen   map[string]int // events received but not yet awaited; the test goroutine's

	mu      sync.Mutex
	eps     map[int]*tbEndpoint
	changed chan struct{} // closed and replaced on every change
}

type tbEndpoint struct {
	supervisor.Endpoint
	draining bool
	inflight int
	idle     chan struct{} // closed when draining and nothing is in flight
	client   *http.Client
}

var _ supervisor.Balancer = (*testBalancer)(nil)

func newTestBalancer() *testBalancer {
	return &testBalancer{events: make(chan string, 1000), seen: map[string]int{}, eps: map[int]*tbEndpoint{}, changed: make(chan struct{})}
}

func (b *testBalancer) changedLocked() {
	close(b.changed)
	b.changed = make(chan struct{})
}

func (b *testBalancer) Add(e supervisor.Endpoint) {
	b.mu.Lock()
	b.eps[e.ID] = &tbEndpoint{Endpoint: e, idle: make(chan struct{}), client: clientFor(e)}
	b.changedLocked()
	b.mu.Unlock()
	b.events <- fmt.Sprintf("add %d", e.ID)
}

func (b *testBalancer) Drain(ctx context.Context, id int) error {
	b.events <- fmt.Sprintf("drain %d", id)
	b.mu.Lock()
	ep := b.eps[id]
	if ep == nil {
		b.mu.Unlock()
		return nil
	}
	ep.draining = true
	if ep.inflight == 0 {
		close(ep.idle)
	}
	b.mu.Unlock()
	select {
	case <-ep.idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *testBalancer) Remove(id int) {
	b.mu.Lock()
	if ep := b.eps[id]; ep != nil {
		if ep.draining && ep.inflight > 0 {
			close(ep.idle) // Drain must return: the worker is gone
		}
		ep.client.CloseIdleConnections()
		delete(b.eps, id)
	}
	b.changedLocked()
	b.mu.Unlock()
	b.events <- fmt.Sprintf("remove %d", id)
}

// acquire waits for an endpoint with a free slot that is not draining.
func (b *testBalancer) acquire(ctx context.Context) (*tbEndpoint, error) {
	for {
		b.mu.Lock()
		for _, ep := range b.eps {
			if !ep.draining && ep.inflight < ep.Concurrency {
				ep.inflight++
				b.mu.Unlock()
				return ep, nil
			}
		}
		ch := b.changed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (b *testBalancer) release(ep *tbEndpoint) {
	b.mu.Lock()
	defer b.mu.Unlock()
	ep.inflight--
	if ep.draining && ep.inflight == 0 {
		select {
		case <-ep.idle:
		default:
			close(ep.idle)
		}
	}
	b.changedLocked()
}

// await waits for event want, for at most d. Events are matched in any
// order: each is consumed once.
func (b *testBalancer) await(t *testing.T, want string, d time.Duration) {
	t.Helper()
	if b.seen[want] > 0 {
		b.seen[want]--
		return
	}
	deadline := time.After(d)
	for {
		select {
		case e := <-b.events:
			if e == want {
				return
			}
			b.seen[e]++
		case <-deadline:
			t.Fatalf("no %q within %v", want, d)
		}
	}
}

// clientFor returns an HTTP client that dials e whatever the URL says.
func clientFor(e supervisor.Endpoint) *http.Client {
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
				var d net.Dialer
				return d.DialContext(ctx, e.Network, e.Addr)
			},
		},
	}
}

func TestStateTextRoundTrip(t *testing.T) {
	for st := supervisor.StateStarting; st <= supervisor.StateExited; st++ {
		b, _ := st.MarshalText()
		var got supervisor.State
		if err := got.UnmarshalText(b); err != nil || got != st {
			t.Errorf("%v: round trip gave %v, %v", st, got, err)
		}
	}
	var st supervisor.State
	if err := st.UnmarshalText([]byte("sleeping")); err == nil {
		t.Error("UnmarshalText(sleeping): got nil error, want one")
	}
}
