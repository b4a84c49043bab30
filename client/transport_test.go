package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
)

// inboundContext returns the context a handler behind admission.Middleware
// sees for a request classified as p.
func inboundContext(t *testing.T, p admission.Priority) context.Context {
	t.Helper()
	c, err := admission.New(admission.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var ctx context.Context
	m := &admission.Middleware{Controller: c, Classify: func(*http.Request) admission.Request {
		return admission.Request{Priority: p}
	}}
	m.Wrap(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		ctx = r.Context()
	})).ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	if ctx == nil {
		t.Fatal("handler not reached")
	}
	return context.WithoutCancel(ctx)
}

func TestPropagation(t *testing.T) {
	inbound := inboundContext(t, admission.Sheddable)
	tests := []struct {
		name         string
		ctx          func(context.Context) (context.Context, context.CancelFunc)
		header       map[string]string // set by the caller
		wantPriority string            // empty: absent
		wantTimeout  string            // empty: absent
	}{
		{"nothing to propagate", nil, nil, "", ""},
		{"deadline", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 1500*time.Millisecond)
		}, nil, "", "1500"},
		{"deadline rounds down", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return context.WithTimeout(ctx, 1999*time.Microsecond)
		}, nil, "", "1"},
		{"WithPriority", func(ctx context.Context) (context.Context, context.CancelFunc) {
			return client.WithPriority(ctx, admission.SheddablePlus), func() {}
		}, nil, "sheddable-plus", ""},
		{"inbound request's priority", func(context.Context) (context.Context, context.CancelFunc) {
			return inbound, func() {}
		}, nil, "sheddable", ""},
		{"WithPriority over the inbound request's", func(context.Context) (context.Context, context.CancelFunc) {
			return client.WithPriority(inbound, admission.CriticalPlus), func() {}
		}, nil, "critical-plus", ""},
		{"caller's headers kept when the context is silent", nil,
			map[string]string{"Sluice-Priority": "critical-plus", "Sluice-Timeout": "250"}, "critical-plus", "250"},
		{"the context wins over the caller's headers", func(ctx context.Context) (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithTimeout(client.WithPriority(ctx, admission.Sheddable), time.Second)
			return ctx, cancel
		}, map[string]string{"Sluice-Priority": "critical-plus", "Sluice-Timeout": "250"}, "sheddable", "1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx := context.Background()
				if tt.ctx != nil {
					var cancel context.CancelFunc
					ctx, cancel = tt.ctx(ctx)
					defer cancel()
				}
				base := &fakeBase{replies: []reply{ok()}}
				tr := mustNew(t, base, client.Options{})
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/x", nil)
				for k, v := range tt.header {
					req.Header.Set(k, v)
				}
				before := req.Header.Clone()
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				got := base.seen[0].header
				if p := got.Get("Sluice-Priority"); p != tt.wantPriority {
					t.Errorf("Sluice-Priority = %q, want %q", p, tt.wantPriority)
				}
				if d := got.Get("Sluice-Timeout"); d != tt.wantTimeout {
					t.Errorf("Sluice-Timeout = %q, want %q", d, tt.wantTimeout)
				}
				if len(req.Header) != len(before) || req.Header.Get("Sluice-Timeout") != before.Get("Sluice-Timeout") ||
					req.Header.Get("Sluice-Priority") != before.Get("Sluice-Priority") {
					t.Errorf("caller's request headers changed to %v, want %v", req.Header, before)
				}
			})
		})
	}
}

// Each attempt carries the budget left when it is sent, not when the
// request began.
func TestPropagationPerAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		base := &fakeBase{replies: []reply{shed("1"), ok()}}
		tr := mustNew(t, base, client.Options{Rand: constRand(0)})
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://api.test/", nil)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		var got []string
		for _, s := range base.seen {
			got = append(got, s.header.Get("Sluice-Timeout"))
		}
		if want := []string{"5000", "4000"}; strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("Sluice-Timeout per attempt = %v, want %v", got, want)
		}
	})
}

func TestFailFastWithoutTime(t *testing.T) {
	tests := []struct {
		name    string
		timeout time.Duration
	}{
		{"deadline passed", -time.Second},
		{"deadline now", 0},
		{"less than a millisecond left", 999 * time.Microsecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				base := &fakeBase{replies: []reply{ok()}}
				tr := mustNew(t, base, client.Options{})
				ctx, cancel := context.WithTimeout(context.Background(), tt.timeout)
				defer cancel()
				body := &closeTracker{Reader: strings.NewReader("x")}
				req, _ := http.NewRequestWithContext(ctx, "PUT", "http://api.test/", body)
				resp, err := tr.RoundTrip(req)
				if resp != nil || !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("RoundTrip = (%v, %v), want (nil, an error wrapping context.DeadlineExceeded)", resp, err)
				}
				if n := base.calls(); n != 0 {
					t.Errorf("base called %d times, want 0", n)
				}
				if !body.closed {
					t.Error("request body not closed, want closed as a RoundTripper must")
				}
				if got := tr.Stats().Expired; got != 1 {
					t.Errorf("Stats().Expired = %d, want 1", got)
				}
			})
		})
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		header     string // a header name set on the request
		body       string // sent with GetBody
		oneShot    bool   // the body cannot be replayed
		timeout    time.Duration
		opts       client.Options
		replies    []reply
		wantCalls  int
		wantStatus int // 0: want wantErr
		wantErr    error
		wantWait   time.Duration // virtual time RoundTrip took
	}{
		{name: "success is not retried", replies: []reply{ok()}, wantCalls: 1, wantStatus: 200},
		{name: "503 with Retry-After", replies: []reply{shed("2"), ok()}, wantCalls: 2, wantStatus: 200,
			wantWait: 2100 * time.Millisecond}, // 2 s stretched by rnd 0.5 * 10%
		{name: "Retry-After as a date", replies: []reply{shed("Sat, 01 Jan 2000 00:00:03 GMT"), ok()}, wantCalls: 2, wantStatus: 200,
			wantWait: 3150 * time.Millisecond},
		{name: "503 without Retry-After backs off", replies: []reply{{status: 503}, ok()}, wantCalls: 2, wantStatus: 200,
			wantWait: 50 * time.Millisecond},
		{name: "429 backs off exponentially", replies: []reply{{status: 429}, {status: 429}, ok()}, wantCalls: 3, wantStatus: 200,
			wantWait: 150 * time.Millisecond},
		{name: "gives up after MaxAttempts and returns the last response", replies: []reply{{status: 503}}, wantCalls: 3, wantStatus: 503,
			wantWait: 150 * time.Millisecond},
		{name: "MaxAttempts 1 never retries", opts: client.Options{MaxAttempts: 1}, replies: []reply{{status: 503}}, wantCalls: 1, wantStatus: 503},
		{name: "MaxAttempts 5", opts: client.Options{MaxAttempts: 5}, replies: []reply{{status: 503}}, wantCalls: 5, wantStatus: 503,
			wantWait: 750 * time.Millisecond},
		{name: "500 is an answer", replies: []reply{{status: 500}, ok()}, wantCalls: 1, wantStatus: 500},
		{name: "404 is an answer", replies: []reply{{status: 404}, ok()}, wantCalls: 1, wantStatus: 404},
		{name: "POST is not retried", method: "POST", body: "payload", replies: []reply{shed("1"), ok()}, wantCalls: 1, wantStatus: 503},
		{name: "POST with an Idempotency-Key is", method: "POST", header: "Idempotency-Key", body: "payload",
			replies: []reply{shed("1"), ok()}, wantCalls: 2, wantStatus: 200, wantWait: 1050 * time.Millisecond},
		{name: "PUT whose body cannot be replayed is not", method: "PUT", body: "payload", oneShot: true,
			replies: []reply{shed("1"), ok()}, wantCalls: 1, wantStatus: 503},
		{name: "PUT replays its body", method: "PUT", body: "payload", replies: []reply{refused(), ok()}, wantCalls: 2, wantStatus: 200,
			wantWait: 50 * time.Millisecond},
		{name: "connection error before sending is retried", replies: []reply{refused(), refused(), ok()}, wantCalls: 3, wantStatus: 200,
			wantWait: 150 * time.Millisecond},
		{name: "connection error after sending is not", replies: []reply{{err: errRefused, wrote: true}, ok()}, wantCalls: 1, wantErr: errRefused},
		{name: "connection errors until MaxAttempts", replies: []reply{refused()}, wantCalls: 3, wantErr: errRefused, wantWait: 150 * time.Millisecond},
		{name: "Retry-After beyond MaxWait returns at once", replies: []reply{shed("11"), ok()}, wantCalls: 1, wantStatus: 503},
		{name: "Retry-After within a raised MaxWait", opts: client.Options{MaxWait: time.Minute}, replies: []reply{shed("11"), ok()},
			wantCalls: 2, wantStatus: 200, wantWait: 11550 * time.Millisecond},
		{name: "no waiting past the deadline", timeout: 1500 * time.Millisecond, replies: []reply{shed("2"), ok()},
			wantCalls: 1, wantStatus: 503},
		{name: "waiting within the deadline", timeout: 2500 * time.Millisecond, replies: []reply{shed("2"), ok()},
			wantCalls: 2, wantStatus: 200, wantWait: 2100 * time.Millisecond},
		{name: "retry budget off", opts: client.Options{RetryRatio: -1, RetryMinRate: -1}, replies: []reply{{status: 503}, ok()},
			wantCalls: 1, wantStatus: 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				opts := tt.opts
				opts.Rand = constRand(0.5)
				base := &fakeBase{replies: tt.replies}
				tr := mustNew(t, base, opts)
				ctx := context.Background()
				if tt.timeout > 0 {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, tt.timeout)
					defer cancel()
				}
				var body io.Reader
				if tt.body != "" {
					body = strings.NewReader(tt.body)
					if tt.oneShot {
						body = io.MultiReader(body)
					}
				}
				req, _ := http.NewRequestWithContext(ctx, cmp(tt.method, "GET"), "http://api.test/", body)
				if tt.header != "" {
					req.Header.Set(tt.header, "k-1")
				}
				start := time.Now()
				resp, err := tr.RoundTrip(req)
				if took := time.Since(start); took != tt.wantWait {
					t.Errorf("RoundTrip took %v, want %v", took, tt.wantWait)
				}
				if n := base.calls(); n != tt.wantCalls {
					t.Errorf("base called %d times, want %d", n, tt.wantCalls)
				}
				if tt.wantStatus != 0 {
					if err != nil {
						t.Fatalf("RoundTrip error %v, want status %d", err, tt.wantStatus)
					}
					if resp.StatusCode != tt.wantStatus {
						t.Errorf("status %d, want %d", resp.StatusCode, tt.wantStatus)
					}
					if b, _ := io.ReadAll(resp.Body); string(b) != http.StatusText(tt.wantStatus) {
						t.Errorf("returned body %q, want %q unread", b, http.StatusText(tt.wantStatus))
					}
					resp.Body.Close()
				} else if !errors.Is(err, tt.wantErr) {
					t.Errorf("RoundTrip error %v, want %v", err, tt.wantErr)
				}
				for i, s := range base.seen {
					if s.body != tt.body {
						t.Errorf("attempt %d sent body %q, want %q", i+1, s.body, tt.body)
					}
				}
				for i, b := range base.bodies[:max(len(base.bodies)-1, 0)] {
					if !b.drained() {
						t.Errorf("response %d of a retried attempt not drained and closed", i+1)
					}
				}
				st := tr.Stats()
				if st.Requests != 1 || st.Attempts != uint64(tt.wantCalls) || st.Retries != uint64(tt.wantCalls-1) {
					t.Errorf("Stats = %d requests, %d attempts, %d retries; want 1, %d, %d",
						st.Requests, st.Attempts, st.Retries, tt.wantCalls, tt.wantCalls-1)
				}
			})
		})
	}
}

func cmp(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
