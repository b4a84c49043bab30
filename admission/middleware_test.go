package admission_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
)

func TestWriteShed(t *testing.T) {
	tests := []struct {
		reason     admission.Reason
		retryAfter time.Duration
		wantCode   int
		wantRetry  string
	}{
		{admission.ReasonQueueFull, 0, 503, "1"},
		{admission.ReasonQueueTimeout, 1500 * time.Millisecond, 503, "2"},
		{admission.ReasonShutdown, 3 * time.Second, 503, "3"},
		{admission.ReasonTenant, time.Second, 429, "1"},
		{admission.ReasonQuota, 4 * time.Second, 429, "4"},
		{admission.ReasonLimit, 60 * time.Second, 503, "60"},
		{admission.ReasonCoDel, 90 * time.Second, 503, "90"}, // beyond RetryAfter's range
	}
	for _, tt := range tests {
		t.Run(tt.reason.String(), func(t *testing.T) {
			rec := httptest.NewRecorder()
			admission.WriteShed(rec, tt.reason, tt.retryAfter)
			if rec.Code != tt.wantCode {
				t.Errorf("got status %d, want %d", rec.Code, tt.wantCode)
			}
			if got := rec.Header().Get("Retry-After"); got != tt.wantRetry {
				t.Errorf("got Retry-After %q, want %q", got, tt.wantRetry)
			}
			if got := rec.Header().Get("Sluice-Shed"); got != tt.reason.String() {
				t.Errorf("got Sluice-Shed %q, want %q", got, tt.reason)
			}
			if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") || rec.Body.Len() == 0 {
				t.Errorf("got Content-Type %q and %d body bytes, want a short text body", ct, rec.Body.Len())
			}
			if cl := rec.Header().Get("Content-Length"); cl != strconv.Itoa(rec.Body.Len()) {
				t.Errorf("got Content-Length %q for %d body bytes", cl, rec.Body.Len())
			}
		})
	}
}

// A shed allocates nothing: under overload it is nearly every answer.
func TestWriteShedAllocatesNothing(t *testing.T) {
	w := &headerWriter{h: make(http.Header)}
	if n := testing.AllocsPerRun(100, func() {
		clear(w.h)
		admission.WriteShed(w, admission.ReasonQueueFull, 2*time.Second)
	}); n != 0 {
		t.Errorf("WriteShed: %v allocations, want 0", n)
	}
}

// The header values WriteShed shares between responses are not changed
// by what a wrapper adds to one response's header.
func TestWriteShedSharedValuesStay(t *testing.T) {
	first := httptest.NewRecorder()
	admission.WriteShed(first, admission.ReasonQueueFull, time.Second)
	for _, k := range []string{"Content-Type", "Content-Length", "X-Content-Type-Options", "Retry-After", "Sluice-Shed"} {
		first.Header().Add(k, "added")
	}
	second := httptest.NewRecorder()
	admission.WriteShed(second, admission.ReasonQueueFull, time.Second)
	want := http.Header{
		"Content-Type":           {"text/plain; charset=utf-8"},
		"Content-Length":         {strconv.Itoa(len("Service Busy\n"))},
		"X-Content-Type-Options": {"nosniff"},
		"Retry-After":            {"1"},
		"Sluice-Shed":            {"queue-full"},
	}
	for k, v := range want {
		if got := second.Header()[k]; !slices.Equal(got, v) {
			t.Errorf("%s after another response's Add: %q, want %q", k, got, v)
		}
	}
}

// headerWriter is a ResponseWriter that keeps nothing but its header.
type headerWriter struct{ h http.Header }

func (w *headerWriter) Header() http.Header         { return w.h }
func (w *headerWriter) Write(p []byte) (int, error) { return len(p), nil }
func (w *headerWriter) WriteHeader(int)             {}

func TestMiddlewareShedsWithHeaders(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{QueueSize: -1})
		release := make(chan struct{})
		h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			<-release
			io.WriteString(w, "done")
		}))
		first := httptest.NewRecorder()
		go h.ServeHTTP(first, httptest.NewRequest("GET", "/", nil))
		synctest.Wait()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
		if rec.Code != 503 || rec.Header().Get("Sluice-Shed") != "limit" || rec.Header().Get("Retry-After") == "" {
			t.Fatalf("got %d with headers %v, want 503, Sluice-Shed: limit and a Retry-After", rec.Code, rec.Header())
		}
		close(release)
		synctest.Wait()
		if first.Body.String() != "done" || c.Stats().Inflight != 0 {
			t.Fatalf("got body %q and %d in flight, want the first request served and its slot back", first.Body, c.Stats().Inflight)
		}
	})
}

// The slot is held until ServeHTTP returns: a streamed body still being
// written counts as in flight.
func TestMiddlewareHoldsSlotWhileStreaming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{})
		next := make(chan struct{})
		h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			for range 3 {
				io.WriteString(w, "chunk\n")
				w.(http.Flusher).Flush()
				<-next
			}
		}))
		go h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
		for range 3 {
			synctest.Wait()
			if got := c.Stats().Inflight; got != 1 {
				t.Fatalf("mid-stream: got %d in flight, want 1", got)
			}
			next <- struct{}{}
		}
		synctest.Wait()
		if got := c.Stats().Inflight; got != 0 {
			t.Fatalf("after the stream: got %d in flight, want 0", got)
		}
	})
}

func TestMiddlewareReleasesOnPanic(t *testing.T) {
	c := newController(t, 1, admission.Options{})
	h := c.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }))
	func() {
		defer func() {
			if r := recover(); r != "boom" {
				t.Fatalf("got panic %v, want the handler's panic to continue", r)
			}
		}()
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	}()
	if got := c.Stats().Inflight; got != 0 {
		t.Fatalf("got %d in flight after a panic, want 0", got)
	}
}

// A request whose client hangs up while it waits never reaches the handler
// and gets no response.
func TestMiddlewareDropsGoneClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := newController(t, 1, admission.Options{})
		held := mustAcquire(t, c)
		called := false
		h := c.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { called = true }))
		ctx, hangUp := context.WithCancel(context.Background())
		rec := httptest.NewRecorder()
		done := make(chan struct{})
		go func() {
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil).WithContext(ctx))
			close(done)
		}()
		synctest.Wait()
		hangUp()
		<-done
		held.Release()
		if called {
			t.Fatal("the handler ran for a client that had gone")
		}
		if rec.Body.Len() != 0 || c.Stats().Cancelled != 1 {
			t.Fatalf("got body %q, cancelled %d, want no response and one cancellation", rec.Body, c.Stats().Cancelled)
		}
	})
}

func TestMiddlewareClassifyReachesHandler(t *testing.T) {
	c := newController(t, 1, admission.Options{})
	m := &admission.Middleware{
		Controller: c,
		Classify: func(r *http.Request) admission.Request {
			return admission.Request{Priority: admission.Sheddable, Tenant: r.Header.Get("X-Tenant")}
		},
	}
	var got admission.Request
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, _ = admission.FromContext(r.Context())
	}))
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("X-Tenant", "acme")
	h.ServeHTTP(httptest.NewRecorder(), r)
	if got.Priority != admission.Sheddable || got.Tenant != "acme" {
		t.Fatalf("got %+v in the handler's context, want sheddable for acme", got)
	}
}

// The header forms are a wire contract (Sluice-Priority, sluice.yaml's
// routes, node/sluice-worker): spelled out here, not taken from the code.
func TestParsePriority(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    admission.Priority
	}{
		{"critical-plus", admission.CriticalPlus},
		{"critical", admission.Critical},
		{"sheddable-plus", admission.SheddablePlus},
		{"sheddable", admission.Sheddable},
	} {
		if got := tc.p.String(); got != tc.name {
			t.Errorf("%d.String() = %q, want %q", tc.p, got, tc.name)
		}
		got, err := admission.ParsePriority(tc.name)
		if err != nil || got != tc.p {
			t.Errorf("ParsePriority(%q) = %v, %v, want %v", tc.name, got, err, tc.p)
		}
	}
	if got := admission.Priority(5).String(); got != "critical-plus" {
		t.Errorf("Priority(5).String() = %q, want critical-plus (clamped)", got)
	}
	_, err := admission.ParsePriority("urgent")
	if want := `admission: unknown priority "urgent" (want critical-plus, critical, sheddable-plus or sheddable)`; err == nil || err.Error() != want {
		t.Errorf("ParsePriority(urgent): got %v, want %s", err, want)
	}
}
