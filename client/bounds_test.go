package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/client"
)

func get(t *testing.T, tr http.RoundTripper, ctx context.Context, url string) (int, error) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// A backend that sheds everything gets at most 10% more attempts than
// requests once the floor is used up, not 3x.
func TestRetryBudgetBoundsAmplification(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{shed("0")}}
		tr := mustNew(t, base, client.Options{Rand: constRand(0.5), ThrottleK: -1, RetryMinRate: 0.1}) // floor: 1 retry per 10 s
		const requests = 1000
		for range requests {
			if code, err := get(t, tr, context.Background(), "http://api.test/"); code != 503 || err != nil {
				t.Fatalf("got (%d, %v), want (503, nil)", code, err)
			}
		}
		st := tr.Stats()
		if want := uint64(requests + requests/10); st.Attempts > want {
			t.Errorf("%d attempts for %d requests, want at most %d", st.Attempts, requests, want)
		}
		if st.Retries+st.RetriesDenied < requests || st.Retries < requests/10-10 || st.RetriesDenied == 0 {
			t.Errorf("Stats: %d retries, %d denied; want every request to have asked, about %d granted, the rest refused",
				st.Retries, st.RetriesDenied, requests/10)
		}
		if st.Attempts != uint64(base.calls()) {
			t.Errorf("Stats().Attempts = %d, base called %d times", st.Attempts, base.calls())
		}
	})
}

// The floor lets a quiet client retry every failure.
func TestRetryBudgetFloor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{{status: 503}, ok()}}
		tr := mustNew(t, base, client.Options{Rand: constRand(0.5)})
		for i := range 5 {
			base.mu.Lock()
			base.seen = nil
			base.mu.Unlock()
			if code, err := get(t, tr, context.Background(), "http://api.test/"); code != 200 || err != nil {
				t.Fatalf("request %d: got (%d, %v), want (200, nil)", i, code, err)
			}
			time.Sleep(time.Second)
		}
		if st := tr.Stats(); st.Retries != 5 || st.RetriesDenied != 0 {
			t.Errorf("Stats: %d retries, %d denied; want 5, 0", st.Retries, st.RetriesDenied)
		}
	})
}

// A host that sheds most requests sees its client reject locally, up to
// the cap, and never send the rejected ones.
func TestThrottling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{shed("1")}}
		tr := mustNew(t, base, client.Options{Rand: seeded(1), MaxAttempts: 1})
		const requests = 1200 // 10 a second for two minutes
		throttled := 0
		for range requests {
			_, err := get(t, tr, context.Background(), "http://api.test/")
			if errors.Is(err, client.ErrThrottled) {
				throttled++
			}
			time.Sleep(100 * time.Millisecond)
		}
		st := tr.Stats()
		if st.Throttled != uint64(throttled) || st.Attempts+st.Throttled != requests || uint64(base.calls()) != st.Attempts {
			t.Errorf("Stats: %d attempts, %d throttled, base called %d times; want attempts+throttled = %d and %d throttled errors",
				st.Attempts, st.Throttled, base.calls(), requests, throttled)
		}
		// Once the floor of 24 requests is reached, p sits at the cap.
		if got, lo, hi := float64(throttled)/requests, 0.70, 0.85; got < lo || got > hi {
			t.Errorf("throttled fraction %.3f, want in [%v, %v]", got, lo, hi)
		}
		h := st.Hosts["api.test"]
		if h.RejectProbability != 0.8 || h.Breaker != client.BreakerClosed {
			t.Errorf("host stats %+v, want reject probability 0.8 and a closed breaker (shedding is not failing)", h)
		}
	})
}

func TestThrottlingSparesQuietClients(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{shed("1")}}
		tr := mustNew(t, base, client.Options{Rand: seeded(2), MaxAttempts: 1})
		for range 20 { // 20 requests in two minutes: under 0.2 a second
			if _, err := get(t, tr, context.Background(), "http://api.test/"); err != nil {
				t.Fatalf("got %v, want a response", err)
			}
			time.Sleep(6 * time.Second)
		}
		if st := tr.Stats(); st.Throttled != 0 {
			t.Errorf("Stats().Throttled = %d, want 0 below the minimum rate", st.Throttled)
		}
	})
}

func TestThrottlingIsPerHost(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{shed("1")}}
		tr := mustNew(t, base, client.Options{Rand: constRand(0.5), MaxAttempts: 1, ThrottleMinRate: -1})
		for range 10 {
			get(t, tr, context.Background(), "http://busy.test/")
		}
		if _, err := get(t, tr, context.Background(), "http://busy.test/"); !errors.Is(err, client.ErrThrottled) {
			t.Fatalf("busy host: got %v, want ErrThrottled", err)
		}
		base.replies = []reply{ok()}
		if code, err := get(t, tr, context.Background(), "http://other.test/"); code != 200 || err != nil {
			t.Errorf("other host: got (%d, %v), want (200, nil)", code, err)
		}
	})
}

func TestCircuitBreaker(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logs bytes.Buffer
		base := &fakeBase{replies: []reply{refused()}}
		tr := mustNew(t, base, client.Options{
			MaxAttempts: 1, Rand: constRand(0.5),
			Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{ReplaceAttr: dropTime})),
		})
		for i := range 5 {
			if _, err := get(t, tr, context.Background(), "http://down.test/"); !errors.Is(err, errRefused) {
				t.Fatalf("attempt %d: got %v, want the connection error", i+1, err)
			}
		}
		_, err := get(t, tr, context.Background(), "http://down.test/")
		if !errors.Is(err, client.ErrCircuitOpen) || base.calls() != 5 {
			t.Fatalf("after 5 failures: got %v with %d calls, want ErrCircuitOpen without a call", err, base.calls())
		}
		if st := tr.Stats(); st.Hosts["down.test"].Breaker != client.BreakerOpen || st.CircuitOpen != 1 {
			t.Errorf("Stats: breaker %v, %d circuit-open rejections; want open, 1", st.Hosts["down.test"].Breaker, st.CircuitOpen)
		}

		time.Sleep(5 * time.Second) // the cooldown
		if _, err := get(t, tr, context.Background(), "http://down.test/"); !errors.Is(err, errRefused) {
			t.Fatalf("failing probe: got %v, want the connection error", err)
		}
		if _, err := get(t, tr, context.Background(), "http://down.test/"); !errors.Is(err, client.ErrCircuitOpen) {
			t.Fatalf("after a failed probe: got %v, want ErrCircuitOpen", err)
		}

		time.Sleep(5 * time.Second)
		base.replies = []reply{ok()}
		if code, err := get(t, tr, context.Background(), "http://down.test/"); code != 200 || err != nil {
			t.Fatalf("succeeding probe: got (%d, %v), want (200, nil)", code, err)
		}
		if st := tr.Stats(); st.Hosts["down.test"].Breaker != client.BreakerClosed {
			t.Errorf("after a successful probe the breaker is %v, want closed", st.Hosts["down.test"].Breaker)
		}
		want := `level=WARN msg="client: circuit opened" host=down.test from=closed to=open error="` + errRefused.Error() + `"
level=WARN msg="client: circuit opened" host=down.test from=half-open to=open error="` + errRefused.Error() + `"
level=INFO msg="client: circuit closed" host=down.test from=half-open to=closed status=200
`
		if logs.String() != want {
			t.Errorf("logs:\n%s\nwant:\n%s", logs.String(), want)
		}
	})
}

func dropTime(_ []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey {
		return slog.Attr{}
	}
	return a
}

// A host that kept failing while the client throttled it must get its
// half-open probes (the throttle would refuse them) and, once one succeeds,
// all its traffic back: the throttle's counts describe the outage.
func TestRecoveryResetsThrottle(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var draw float64 = 0.99 // above the cap: the throttle lets everything through
		base := &fakeBase{replies: []reply{shed("1")}}
		tr := mustNew(t, base, client.Options{MaxAttempts: 1, ThrottleMinRate: -1, Rand: func() float64 { return draw }})
		for range 100 {
			get(t, tr, context.Background(), "http://api.test/")
		}
		base.replies = []reply{refused()}
		for range 5 {
			get(t, tr, context.Background(), "http://api.test/")
		}
		st := tr.Stats().Hosts["api.test"]
		if st.Breaker != client.BreakerOpen || st.RejectProbability != 0.8 {
			t.Fatalf("host %+v, want an open breaker and reject probability 0.8", st)
		}
		time.Sleep(5 * time.Second)
		draw = 0 // now the throttle would refuse anything it judged
		base.replies = []reply{ok()}
		if code, err := get(t, tr, context.Background(), "http://api.test/"); code != 200 || err != nil {
			t.Fatalf("probe: got (%d, %v), want (200, nil): probes skip the throttle", code, err)
		}
		if st := tr.Stats().Hosts["api.test"]; st.Breaker != client.BreakerClosed || st.RejectProbability != 0 {
			t.Errorf("after recovery host %+v, want closed and reject probability 0", st)
		}
		if code, err := get(t, tr, context.Background(), "http://api.test/"); code != 200 || err != nil {
			t.Errorf("after recovery: got (%d, %v), want (200, nil)", code, err)
		}
	})
}

// A shedding host (503 with Retry-After, 429) is alive: it is throttled,
// not cut off.
func TestSheddingDoesNotOpenTheBreaker(t *testing.T) {
	for _, r := range []reply{shed("1"), {status: 429}} {
		t.Run(fmt.Sprint(r.status), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &fakeBase{replies: []reply{r}}
				tr := mustNew(t, base, client.Options{MaxAttempts: 1, ThrottleK: -1})
				for range 50 {
					get(t, tr, context.Background(), "http://api.test/")
				}
				if st := tr.Stats(); st.CircuitOpen != 0 || st.Hosts["api.test"].Breaker != client.BreakerClosed {
					t.Errorf("after 50 shed responses: %d circuit-open rejections, breaker %v; want 0, closed",
						st.CircuitOpen, st.Hosts["api.test"].Breaker)
				}
			})
		})
	}
}

// A retry the breaker or throttle refuses ends the request with that
// refusal; the response it would have replaced has been drained.
func TestLocalRejectionOfARetry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{{status: 503}, ok()}}
		tr := mustNew(t, base, client.Options{BreakerFailures: 1, Rand: constRand(0.5)})
		_, err := get(t, tr, context.Background(), "http://api.test/")
		if !errors.Is(err, client.ErrCircuitOpen) || base.calls() != 1 {
			t.Errorf("got %v after %d calls, want ErrCircuitOpen after 1", err, base.calls())
		}
		if !base.bodies[0].drained() {
			t.Error("the 503 that was to be retried was not drained and closed")
		}
	})
}

func TestCancelWhileWaiting(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{shed("5"), ok()}}
		tr := mustNew(t, base, client.Options{Rand: constRand(0)})
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		_, err := get(t, tr, ctx, "http://api.test/")
		if !errors.Is(err, context.Canceled) || time.Since(start) != time.Second || base.calls() != 1 {
			t.Errorf("got %v after %v and %d calls, want context.Canceled after 1s and 1 call", err, time.Since(start), base.calls())
		}
	})
}

func TestReplayError(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{refused(), ok()}}
		tr := mustNew(t, base, client.Options{Rand: constRand(0)})
		req, _ := http.NewRequest("PUT", "http://api.test/", strings.NewReader("x"))
		errGone := errors.New("gone")
		req.GetBody = func() (io.ReadCloser, error) { return nil, errGone }
		if _, err := tr.RoundTrip(req); !errors.Is(err, errGone) || base.calls() != 1 {
			t.Errorf("got %v after %d calls, want the GetBody error after 1", err, base.calls())
		}
	})
}

// Hosts nobody called for longer than every window are forgotten once
// the map grows.
func TestIdleHostsAreForgotten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{ok()}}
		tr := mustNew(t, base, client.Options{})
		for i := range 64 {
			get(t, tr, context.Background(), fmt.Sprintf("http://h%d.test/", i))
		}
		time.Sleep(3 * time.Minute)
		get(t, tr, context.Background(), "http://fresh.test/")
		if hosts := tr.Stats().Hosts; len(hosts) != 1 {
			t.Errorf("%d hosts known, want 1 (the idle ones forgotten)", len(hosts))
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	base := &fakeBase{replies: []reply{{status: 503}, ok(), refused(), shed("0"), ok()}}
	tr := mustNew(t, base, client.Options{Rand: seeded(3), BackoffBase: time.Microsecond, BackoffCap: time.Microsecond})
	var wg sync.WaitGroup
	const workers, each = 8, 50
	for w := range workers {
		wg.Go(func() {
			for i := range each {
				get(t, tr, context.Background(), fmt.Sprintf("http://h%d.test/", (w+i)%3))
				if i%10 == 0 {
					tr.Stats()
				}
			}
		})
	}
	wg.Wait()
	st := tr.Stats()
	if st.Requests != workers*each || st.Attempts != uint64(base.calls()) {
		t.Errorf("Stats: %d requests, %d attempts, base %d calls; want %d requests and attempts = calls",
			st.Requests, st.Attempts, base.calls(), workers*each)
	}
}

func TestZeroValueDefaults(t *testing.T) {
	var tr client.Transport
	if st := tr.Stats(); st.Requests != 0 || len(st.Hosts) != 0 {
		t.Errorf("zero Transport stats %+v, want empty", st)
	}
	tr.CloseIdleConnections() // http.DefaultTransport underneath: must not panic
}

func TestNewRejectsBadOptions(t *testing.T) {
	if _, err := client.New(nil, client.Options{ThrottleK: 0.5}); err == nil {
		t.Error("New with ThrottleK 0.5 = nil error, want one")
	}
}

type idleCloser struct {
	fakeBase
	closed int
}

func (c *idleCloser) CloseIdleConnections() { c.closed++ }

func TestCloseIdleConnections(t *testing.T) {
	base := &idleCloser{}
	tr := mustNew(t, base, client.Options{})
	(&http.Client{Transport: tr}).CloseIdleConnections()
	if base.closed != 1 {
		t.Errorf("base CloseIdleConnections called %d times, want 1", base.closed)
	}
}
