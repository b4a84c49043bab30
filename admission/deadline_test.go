package admission_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// The middleware puts the request's deadline, from the route timeout or a
// trusted Sluice-Timeout, on the handler's context, and cancels it when the
// handler returns.
func TestMiddlewareDeadline(t *testing.T) {
	cl := &admission.Classifier{
		TrustedPeers: []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")},
		Rules:        []admission.Rule{{PathPrefix: "/slow", Timeout: 2 * time.Second}},
	}
	for _, tc := range []struct {
		name, path, peer, timeout string
		want                      time.Duration // 0: no deadline
	}{
		{"no timeout", "/", "192.0.2.1:1234", "", 0},
		{"route timeout", "/slow", "198.51.100.1:1234", "", 2 * time.Second},
		{"trusted Sluice-Timeout", "/", "192.0.2.1:1234", "300", 300 * time.Millisecond},
		{"the shorter of the two", "/slow", "192.0.2.1:1234", "5000", 2 * time.Second},
		{"untrusted Sluice-Timeout ignored", "/", "198.51.100.1:1234", "300", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := newController(t, 10, admission.Options{SampleWindow: -1})
				var ctx context.Context
				h := (&admission.Middleware{Controller: c, Classify: cl.Classify}).Wrap(
					http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { ctx = r.Context() }))
				r := httptest.NewRequest("GET", tc.path, nil)
				r.RemoteAddr = tc.peer
				if tc.timeout != "" {
					r.Header.Set(admission.HeaderTimeout, tc.timeout)
				}
				start := time.Now()
				h.ServeHTTP(httptest.NewRecorder(), r)
				d, ok := ctx.Deadline()
				switch {
				case tc.want == 0 && ok:
					t.Fatalf("got deadline in %v, want none", d.Sub(start))
				case tc.want == 0:
					if ctx.Err() != nil {
						t.Errorf("got context error %v after the handler returned, want none", ctx.Err())
					}
					return
				case !ok:
					t.Fatalf("got no deadline, want one in %v", tc.want)
				case d.Sub(start) != tc.want:
					t.Errorf("got deadline in %v, want %v", d.Sub(start), tc.want)
				}
				if ctx.Err() != context.Canceled {
					t.Errorf("got context error %v after the handler returned, want context.Canceled", ctx.Err())
				}
			})
		})
	}
}

// A handler that outlives its deadline sees its context end at the
// deadline, not before.
func TestMiddlewareDeadlineExpires(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 10, admission.Options{SampleWindow: -1})
		deadline := time.Now().Add(time.Second)
		var waited time.Duration
		var err error
		h := (&admission.Middleware{Controller: c, Classify: func(*http.Request) admission.Request {
			return admission.Request{Deadline: deadline}
		}}).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			start := time.Now()
			<-r.Context().Done()
			waited, err = time.Since(start), r.Context().Err()
		}))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		if waited != time.Second || err != context.DeadlineExceeded {
			t.Errorf("got context done after %v with %v, want after 1s with %v", waited, err, context.DeadlineExceeded)
		}
	})
}
