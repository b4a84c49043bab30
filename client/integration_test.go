package client_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
)

// shedServer is a sluice-like server on 127.0.0.1: it sheds the first
// `shed` requests with admission.WriteShed (503, Retry-After: 1,
// Sluice-Shed) and answers the rest, recording what its Classifier made of
// each request.
type shedServer struct {
	*httptest.Server
	mu   sync.Mutex
	shed int
	got  []arrival
}

type arrival struct {
	at     time.Time
	req    admission.Request
	budget time.Duration // the deadline the server derived, from its arrival
}

func newShedServer(t *testing.T, shed int) *shedServer {
	t.Helper()
	s := &shedServer{shed: shed}
	cl := &admission.Classifier{TrustedPeers: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		req := cl.Classify(r)
		s.mu.Lock()
		a := arrival{at: now, req: req}
		if !req.Deadline.IsZero() {
			a.budget = req.Deadline.Sub(now)
		}
		s.got = append(s.got, a)
		n := len(s.got)
		s.mu.Unlock()
		if n <= s.shed {
			admission.WriteShed(w, admission.ReasonQueueFull, time.Second)
			return
		}
		io.WriteString(w, "ok\n")
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *shedServer) arrivals() []arrival {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]arrival(nil), s.got...)
}

func newBase(t *testing.T) *http.Transport {
	base := &http.Transport{}
	t.Cleanup(base.CloseIdleConnections)
	return base
}

// Against a real shedding server: the client waits out Retry-After, comes
// back, and every attempt carries its priority and remaining budget, which
// the server's Classifier believes from a trusted peer.
func TestIntegrationRetryAfterAndPropagation(t *testing.T) {
	srv := newShedServer(t, 2)
	tr := mustNew(t, newBase(t), client.Options{Rand: constRand(0)})
	ctx, cancel := context.WithTimeout(client.WithPriority(context.Background(), admission.Sheddable), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(b) != "ok\n" {
		t.Fatalf("got %d %q, want 200 \"ok\\n\"", resp.StatusCode, b)
	}
	got := srv.arrivals()
	if len(got) != 3 {
		t.Fatalf("server saw %d requests, want 3", len(got))
	}
	for i, a := range got {
		if a.req.Priority != admission.Sheddable {
			t.Errorf("attempt %d: server classified priority %v, want sheddable", i+1, a.req.Priority)
		}
		if a.budget <= 0 || a.budget > 20*time.Second {
			t.Errorf("attempt %d: server derived budget %v, want in (0, 20s]", i+1, a.budget)
		}
		if i > 0 {
			if gap := a.at.Sub(got[i-1].at); gap < time.Second {
				t.Errorf("attempt %d came %v after the previous, want >= Retry-After 1s", i+1, gap)
			}
			if a.budget >= got[i-1].budget {
				t.Errorf("attempt %d carried budget %v, want less than the previous %v", i+1, a.budget, got[i-1].budget)
			}
		}
	}
}

// A Retry-After the deadline cannot accommodate is not waited out: the
// shed response comes back as it is, after one attempt.
func TestIntegrationNoWaitPastDeadline(t *testing.T) {
	srv := newShedServer(t, 1000)
	tr := mustNew(t, newBase(t), client.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 900*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", srv.URL, nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 503 || resp.Header.Get(admission.HeaderShed) != "queue-full" || string(b) != "Service Busy\n" {
		t.Errorf("got %d, Sluice-Shed %q, body %q; want the server's 503 intact", resp.StatusCode, resp.Header.Get(admission.HeaderShed), b)
	}
	if n := len(srv.arrivals()); n != 1 {
		t.Errorf("server saw %d requests, want 1", n)
	}
}

// Nothing listening: the connection error happens before anything is
// sent, so it is retried up to MaxAttempts, and feeds the breaker.
func TestIntegrationConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	tr := mustNew(t, newBase(t), client.Options{BackoffBase: 10 * time.Millisecond, BreakerFailures: 3})
	req, _ := http.NewRequest("GET", "http://"+addr+"/", nil)
	_, err = tr.RoundTrip(req)
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "dial" {
		t.Fatalf("got %v, want a dial error", err)
	}
	st := tr.Stats()
	if st.Attempts != 3 || st.Hosts[addr].Breaker != client.BreakerOpen {
		t.Errorf("Stats: %d attempts, breaker %v; want 3, open", st.Attempts, st.Hosts[addr].Breaker)
	}
}

func TestIntegrationZeroValue(t *testing.T) {
	srv := newShedServer(t, 0)
	resp, err := (&http.Client{Transport: &client.Transport{}}).Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("status %d, want 200", resp.StatusCode)
	}
}
