package loadgen_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// fakeServer is an http.RoundTripper standing in for a server inside a
// synctest bubble: it records when each attempt arrives (in the bubble's
// fake time) and answers as handle says.
type fakeServer struct {
	start  time.Time
	handle func(req *http.Request, n int) (*http.Response, error) // n: arrivals so far, from 0

	mu       sync.Mutex
	arrivals []time.Duration
	headers  []http.Header
	urls     []string
}

func newFakeServer(handle func(req *http.Request, n int) (*http.Response, error)) *fakeServer {
	return &fakeServer{start: time.Now(), handle: handle}
}

func (f *fakeServer) RoundTrip(req *http.Request) (*http.Response, error) {
	f.mu.Lock()
	n := len(f.arrivals)
	f.arrivals = append(f.arrivals, time.Since(f.start))
	f.headers = append(f.headers, req.Header.Clone())
	f.urls = append(f.urls, req.URL.String())
	f.mu.Unlock()
	return f.handle(req, n)
}

func (f *fakeServer) Arrivals() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.arrivals...)
}

// respond builds a response with the given status and headers ("K", "V", ...).
func respond(req *http.Request, status int, kv ...string) *http.Response {
	h := make(http.Header)
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return &http.Response{
		StatusCode: status,
		Header:     h,
		Body:       io.NopCloser(strings.NewReader("body")),
		Request:    req,
	}
}

// after answers status after d, or fails when the client gives up first.
func after(d time.Duration, status int) func(*http.Request, int) (*http.Response, error) {
	return func(req *http.Request, _ int) (*http.Response, error) {
		select {
		case <-time.After(d):
			return respond(req, status), nil
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
	}
}

func oneSecondAt(rate float64) []loadgen.Phase {
	return []loadgen.Phase{{Rate: rate, Duration: time.Second}}
}

func TestRunIsOpenLoop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The server never answers within the client's patience: a closed
		// loop would send a handful; an open loop sends on schedule.
		srv := newFakeServer(after(time.Hour, 200))
		rep, err := loadgen.Run(t.Context(), loadgen.Config{
			URL:       "http://127.0.0.1:1/",
			Phases:    oneSecondAt(100),
			Timeout:   300 * time.Millisecond,
			Transport: srv,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		arrivals := srv.Arrivals()
		if got, want := len(arrivals), 100; got != want {
			t.Fatalf("got %d arrivals, want %d", got, want)
		}
		for i, at := range arrivals {
			if want := time.Duration(i) * 10 * time.Millisecond; at != want {
				t.Errorf("arrival %d at %v, want %v", i, at, want)
			}
		}
		if got, want := rep.Total.Errors[loadgen.KindTimeout], int64(100); got != want {
			t.Errorf("timeouts = %d, want %d", got, want)
		}
		if got := rep.Total.Successes; got != 0 {
			t.Errorf("successes = %d, want 0", got)
		}
		// The last request was sent at 990 ms and given up at 1290 ms.
		if got, want := rep.Elapsed, 1290*time.Millisecond; got != want {
			t.Errorf("Elapsed = %v, want %v", got, want)
		}
	})
}

func TestRunTimeoutsAreNotSuccesses(t *testing.T) {
	tests := []struct {
		name          string
		serverTakes   time.Duration
		wantSuccesses int64
		wantTimeouts  int64
	}{
		{"answered within patience", 400 * time.Millisecond, 10, 0},
		{"answered after patience", 600 * time.Millisecond, 0, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(after(tt.serverTakes, 200))
				rep, err := loadgen.Run(t.Context(), loadgen.Config{
					URL:       "http://127.0.0.1:1/",
					Phases:    oneSecondAt(10),
					Timeout:   500 * time.Millisecond,
					Transport: srv,
				})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				tot := rep.Total
				if tot.Successes != tt.wantSuccesses || tot.Errors[loadgen.KindTimeout] != tt.wantTimeouts {
					t.Errorf("got %d successes and %d timeouts, want %d and %d",
						tot.Successes, tot.Errors[loadgen.KindTimeout], tt.wantSuccesses, tt.wantTimeouts)
				}
				if tt.wantSuccesses > 0 {
					if got, want := tot.Latency.P50, tt.serverTakes; got != want {
						t.Errorf("p50 = %v, want %v", got, want)
					}
					if got, want := tot.Goodput, 10.0; got != want {
						t.Errorf("goodput = %v, want %v", got, want)
					}
				}
			})
		})
	}
}

func TestRunLatencyIncludesServerQueueing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// A transport that lets one request through at a time, each taking
		// 100 ms, is the "server" at 20/s: request i waits for i-1 before it.
		// (A channel, not a mutex: synctest counts a goroutine blocked on a
		// channel as idle, and fake time moves only when all are.)
		one := make(chan struct{}, 1)
		srv := newFakeServer(func(req *http.Request, _ int) (*http.Response, error) {
			one <- struct{}{}
			defer func() { <-one }()
			time.Sleep(100 * time.Millisecond)
			return respond(req, 200), nil
		})
		rep, err := loadgen.Run(t.Context(), loadgen.Config{
			URL:       "http://127.0.0.1:1/",
			Phases:    []loadgen.Phase{{Rate: 20, Duration: 500 * time.Millisecond}},
			Timeout:   10 * time.Second,
			Transport: srv,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		// Sent every 50 ms, served every 100 ms: the 10th, sent at 450 ms,
		// is answered at 1 s.
		if got, want := rep.Total.Latency.Max, 550*time.Millisecond; got != want {
			t.Errorf("max latency = %v, want %v", got, want)
		}
	})
}

func TestRunDropsAtMaxOutstanding(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(after(time.Hour, 200))
		rep, err := loadgen.Run(t.Context(), loadgen.Config{
			URL:            "http://127.0.0.1:1/",
			Phases:         oneSecondAt(100),
			Timeout:        2 * time.Second,
			MaxOutstanding: 10,
			Transport:      srv,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		arrivals := srv.Arrivals()
		if got, want := len(arrivals), 10; got != want {
			t.Fatalf("got %d arrivals, want %d", got, want)
		}
		if got, want := arrivals[9], 90*time.Millisecond; got != want {
			t.Errorf("10th arrival at %v, want %v (not delayed)", got, want)
		}
		tot := rep.Total
		if tot.Requests != 100 || tot.Attempts != 10 || tot.Errors[loadgen.KindGeneratorDropped] != 90 {
			t.Errorf("got requests %d, attempts %d, dropped %d; want 100, 10, 90",
				tot.Requests, tot.Attempts, tot.Errors[loadgen.KindGeneratorDropped])
		}
		if got, want := tot.Failures, int64(10); got != want {
			t.Errorf("failures = %d, want %d (drops are not failures of sent requests)", got, want)
		}
	})
}

func TestRunRetries(t *testing.T) {
	always := func(status int, kv ...string) func(*http.Request, int) (*http.Response, error) {
		return func(req *http.Request, _ int) (*http.Response, error) { return respond(req, status, kv...), nil }
	}
	shedOnce := func(kv ...string) func(*http.Request, int) (*http.Response, error) {
		return func(req *http.Request, n int) (*http.Response, error) {
			if n == 0 {
				return respond(req, 503, kv...), nil
			}
			return respond(req, 200), nil
		}
	}
	tests := []struct {
		name         string
		mode         loadgen.RetryMode
		attempts     int
		handle       func(*http.Request, int) (*http.Response, error)
		wantArrivals []time.Duration
		wantOK       bool
	}{
		{"none", loadgen.RetryNone, 0, always(503), []time.Duration{0}, false},
		{"immediate re-sends at once", loadgen.RetryImmediate, 0, always(503), []time.Duration{0, 0, 0}, false},
		{"immediate stops at success", loadgen.RetryImmediate, 5, shedOnce(), []time.Duration{0, 0}, true},
		{"client errors are not retried", loadgen.RetryImmediate, 0, always(404), []time.Duration{0}, false},
		{"retry-after honoured", loadgen.RetryRetryAfter, 0, shedOnce("Retry-After", "2"), []time.Duration{0, 2 * time.Second}, true},
		{"retry-after past BackoffMax gives up", loadgen.RetryRetryAfter, 0, shedOnce("Retry-After", "60"), []time.Duration{0}, false},
		{"timeouts are retried with a fresh patience", loadgen.RetryImmediate, 2, after(time.Hour, 200), []time.Duration{0, time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				srv := newFakeServer(tt.handle)
				rep, err := loadgen.Run(t.Context(), loadgen.Config{
					URL:         "http://127.0.0.1:1/",
					Phases:      oneSecondAt(1), // one logical request, at 0
					Retry:       tt.mode,
					MaxAttempts: tt.attempts,
					Transport:   srv,
				})
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				got := srv.Arrivals()
				if len(got) != len(tt.wantArrivals) {
					t.Fatalf("arrivals at %v, want %v", got, tt.wantArrivals)
				}
				for i := range got {
					if got[i] != tt.wantArrivals[i] {
						t.Errorf("arrivals at %v, want %v", got, tt.wantArrivals)
						break
					}
				}
				tot := rep.Total
				if gotOK := tot.Successes == 1; gotOK != tt.wantOK {
					t.Errorf("successes = %d, want success %v", tot.Successes, tt.wantOK)
				}
				if got, want := tot.Attempts, int64(len(tt.wantArrivals)); got != want {
					t.Errorf("attempts = %d, want %d", got, want)
				}
				if tot.Requests != 1 {
					t.Errorf("requests = %d, want 1", tot.Requests)
				}
				if tt.wantOK {
					if got, want := tot.Latency.Max, tt.wantArrivals[len(tt.wantArrivals)-1]; got != want {
						t.Errorf("latency = %v, want %v (from the scheduled send, retries included)", got, want)
					}
				}
			})
		})
	}
}

func TestRunBackoffSpacesAttempts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(func(req *http.Request, _ int) (*http.Response, error) {
			return respond(req, 503, "Retry-After", "1"), nil
		})
		rep, err := loadgen.Run(t.Context(), loadgen.Config{
			URL:         "http://127.0.0.1:1/",
			Phases:      []loadgen.Phase{{Rate: 10, Duration: time.Second}},
			Retry:       loadgen.RetryBackoff,
			MaxAttempts: 4,
			BackoffBase: 100 * time.Millisecond,
			Seed:        3,
			Transport:   srv,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got, want := rep.Total.Attempts, int64(40); got != want {
			t.Errorf("attempts = %d, want %d", got, want)
		}
		if got, want := rep.Total.Errors["503"], int64(40); got != want {
			t.Errorf(`errors["503"] = %d, want %d`, got, want)
		}
		// Every retry waits less than base*2^(n-1), so the 4th attempt of
		// the last request (sent at 900 ms) comes before 900+100+200+400 ms.
		arrivals := srv.Arrivals()
		if got, limit := arrivals[len(arrivals)-1], 1600*time.Millisecond; got >= limit {
			t.Errorf("last attempt at %v, want before %v", got, limit)
		}
	})
}

func TestRunIsSeeded(t *testing.T) {
	tenants := func(seed uint64) string {
		var got []string
		synctest.Test(t, func(t *testing.T) {
			srv := newFakeServer(after(0, 200))
			_, err := loadgen.Run(t.Context(), loadgen.Config{
				URL:    "http://127.0.0.1:1/",
				Phases: oneSecondAt(50),
				HeaderMixes: []loadgen.HeaderMix{{Name: "Sluice-Tenant", Values: []loadgen.Weighted{
					{Value: "a", Weight: 1}, {Value: "b", Weight: 1},
				}}},
				Seed:      seed,
				Transport: srv,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			srv.mu.Lock()
			defer srv.mu.Unlock()
			for _, h := range srv.headers {
				got = append(got, h.Get("Sluice-Tenant"))
			}
		})
		return strings.Join(got, "")
	}
	a, b, c := tenants(1), tenants(1), tenants(2)
	if a != b {
		t.Errorf("seed 1 drew %s, then %s", a, b)
	}
	if a == c {
		t.Errorf("seeds 1 and 2 both drew %s", a)
	}
}

func TestRunMixes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(func(req *http.Request, _ int) (*http.Response, error) {
			if req.URL.Query().Get("cpu") == "50" {
				return respond(req, 503, "Sluice-Shed", "queue-full"), nil
			}
			return respond(req, 200), nil
		})
		rep, err := loadgen.Run(t.Context(), loadgen.Config{
			URL:    "http://127.0.0.1:1/render?page=home",
			Phases: oneSecondAt(1000),
			Header: http.Header{"X-Run": {"mix"}},
			HeaderMixes: []loadgen.HeaderMix{
				{Name: "sluice-tenant", Values: []loadgen.Weighted{{Value: "a", Weight: 90}, {Value: "b", Weight: 10}}},
				{Name: "Sluice-Priority", Values: []loadgen.Weighted{{Value: "critical", Weight: 1}, {Value: "never", Weight: 0}}},
			},
			QueryMix:  []loadgen.Weighted{{Value: "cpu=5", Weight: 90}, {Value: "cpu=50", Weight: 10}},
			Transport: srv,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		srv.mu.Lock()
		defer srv.mu.Unlock()
		counts := map[string]int64{}
		for i, h := range srv.headers {
			counts["Sluice-Tenant="+h.Get("Sluice-Tenant")]++
			counts["Sluice-Priority="+h.Get("Sluice-Priority")]++
			counts["query="+strings.TrimPrefix(srv.urls[i], "http://127.0.0.1:1/render?page=home&")]++
			if h.Get("X-Run") != "mix" {
				t.Fatalf("request %d lacks the extra header: %v", i, h)
			}
		}
		wantNames := []string{"Sluice-Tenant=a", "Sluice-Tenant=b", "Sluice-Priority=critical", "Sluice-Priority=never", "query=cpu=5", "query=cpu=50"}
		if len(rep.Classes) != len(wantNames) {
			t.Fatalf("got %d classes, want %d", len(rep.Classes), len(wantNames))
		}
		for i, c := range rep.Classes {
			if c.Name != wantNames[i] {
				t.Errorf("class %d = %q, want %q", i, c.Name, wantNames[i])
			}
			if got, want := c.Stats.Requests, counts[c.Name]; got != want {
				t.Errorf("class %s: report says %d requests, server saw %d", c.Name, got, want)
			}
		}
		if a := counts["Sluice-Tenant=a"]; a < 850 || a > 950 {
			t.Errorf("tenant a drew %d of 1000, want about 900", a)
		}
		if n := counts["Sluice-Priority=never"]; n != 0 {
			t.Errorf("a value of weight 0 was drawn %d times", n)
		}
		heavy := rep.Classes[5].Stats
		if heavy.Successes != 0 || heavy.Errors["503:queue-full"] != heavy.Requests {
			t.Errorf("cpu=50: got %d successes and errors %v, want every request shed for queue-full", heavy.Successes, heavy.Errors)
		}
	})
}

func TestRunInterrupted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := newFakeServer(after(time.Hour, 200))
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(505*time.Millisecond, cancel)
		rep, err := loadgen.Run(ctx, loadgen.Config{
			URL:       "http://127.0.0.1:1/",
			Phases:    []loadgen.Phase{{Rate: 100, Duration: time.Second}, {Rate: 100, Duration: time.Second}},
			Transport: srv,
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Run error = %v, want one wrapping context.Canceled", err)
		}
		if rep == nil || !rep.Interrupted {
			t.Fatalf("report = %+v, want a partial report marked Interrupted", rep)
		}
		if got, want := rep.Total.Requests, int64(51); got != want {
			t.Errorf("requests = %d, want %d", got, want)
		}
		if got, want := rep.Total.Errors[loadgen.KindCanceled], int64(51); got != want {
			t.Errorf("canceled = %d, want %d", got, want)
		}
		if got, want := rep.Phases[0].Stats.Duration, 505*time.Millisecond; got != want {
			t.Errorf("phase 1 duration = %v, want %v (cut at the interruption)", got, want)
		}
		if got, want := rep.Phases[1].Stats.Duration, time.Duration(0); got != want {
			t.Errorf("phase 2 duration = %v, want %v", got, want)
		}
		if got, want := len(rep.Series), 3; got != want {
			t.Errorf("got %d series points, want %d (250 ms buckets up to 505 ms)", got, want)
		}
	})
}

func TestRunPhasesAndSeries(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// The server has 50 ms of work per request and takes one at a
		// time: 20/s is its capacity. Everything past that is shed.
		var mu sync.Mutex
		busyUntil := time.Now()
		srv := newFakeServer(func(req *http.Request, _ int) (*http.Response, error) {
			mu.Lock()
			now := time.Now()
			if busyUntil.After(now) {
				mu.Unlock()
				return respond(req, 503, "Sluice-Shed", "limit"), nil
			}
			busyUntil = now.Add(50 * time.Millisecond)
			mu.Unlock()
			time.Sleep(50 * time.Millisecond)
			return respond(req, 200), nil
		})
		rep, err := loadgen.Run(t.Context(), loadgen.Config{
			URL: "http://127.0.0.1:1/",
			Phases: []loadgen.Phase{
				{Name: "under", Rate: 10, Duration: time.Second},
				{Rate: 40, Duration: time.Second},
			},
			Bucket:    500 * time.Millisecond,
			Transport: srv,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		under, over := rep.Phases[0], rep.Phases[1]
		if under.Name != "under" || over.Name != "40/s" {
			t.Errorf("phase names %q, %q; want %q, %q", under.Name, over.Name, "under", "40/s")
		}
		if got, want := over.Start, time.Second; got != want {
			t.Errorf("phase 2 starts at %v, want %v", got, want)
		}
		if got, want := under.Stats.SuccessRatio, 1.0; got != want {
			t.Errorf("under capacity: success ratio %v, want %v", got, want)
		}
		if got, want := over.Stats.OfferedRate, 40.0; got != want {
			t.Errorf("over capacity: offered %v/s, want %v/s", got, want)
		}
		if got, want := over.Stats.Goodput, 20.0; got != want {
			t.Errorf("over capacity: goodput %v/s, want %v/s", got, want)
		}
		if got, want := over.Stats.Errors["503:limit"], int64(20); got != want {
			t.Errorf("over capacity: %d shed, want %d", got, want)
		}
		if got, want := len(rep.Series), 4; got != want {
			t.Fatalf("got %d series points, want %d", got, want)
		}
		wantGoodput := []float64{10, 10, 20, 20}
		wantErrors := []float64{0, 0, 20, 20}
		for i, p := range rep.Series {
			if p.Start != time.Duration(i)*500*time.Millisecond || p.Goodput != wantGoodput[i] || p.Errors != wantErrors[i] {
				t.Errorf("point %d = %+v, want start %v, goodput %v, errors %v",
					i, p, time.Duration(i)*500*time.Millisecond, wantGoodput[i], wantErrors[i])
			}
			if p.P99 != 50*time.Millisecond {
				t.Errorf("point %d p99 = %v, want 50ms", i, p.P99)
			}
		}
	})
}

// A Chooser lays the weights end to end and never lands on one of 0.
func TestChooserAt(t *testing.T) {
	c := loadgen.NewChooser([]loadgen.Weighted{{Value: "a", Weight: 3}, {Value: "b", Weight: 0}, {Value: "c", Weight: 1}, {Value: "d", Weight: 0}})
	for _, tc := range []struct {
		x    float64
		want int
	}{
		{0, 0}, {0.74, 0}, {0.75, 2}, {0.999999, 2},
	} {
		if got := c.At(tc.x); got != tc.want {
			t.Errorf("At(%v) = %d, want %d", tc.x, got, tc.want)
		}
	}
}
