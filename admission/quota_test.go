package admission_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
)

// overQuota refuses the tenant "over", saying a request would be accepted
// after retry, and records what it was asked.
type overQuota struct {
	retry time.Duration
	asked []admission.Request
}

func (q *overQuota) Take(req admission.Request) (bool, time.Duration) {
	q.asked = append(q.asked, req)
	if req.Tenant == "over" {
		return false, q.retry
	}
	return true, 0
}

func TestQuotaShedsBeforeASlot(t *testing.T) {
	q := &overQuota{retry: 2500 * time.Millisecond}
	c := newController(t, 1, admission.Options{Quota: q})
	_, err := c.Acquire(context.Background(), admission.Request{Tenant: "over", Quota: "routes[1]"})
	var se *admission.ShedError
	if !errors.As(err, &se) || se.Reason != admission.ReasonQuota || se.RetryAfter != 3*time.Second {
		t.Fatalf("Acquire over quota = %v; want a quota shed with RetryAfter 3s (2.5 s rounded up)", err)
	}
	if len(q.asked) != 1 || q.asked[0].Quota != "routes[1]" {
		t.Errorf("the quota was asked %+v; want the request, its Quota name with it", q.asked)
	}
	if got := c.RetryAfterFor(err); got != 3*time.Second {
		t.Errorf("RetryAfterFor(quota shed) = %v; want 3s", got)
	}
	if st := c.Stats(); st.Shed[admission.ReasonQuota] != 1 || st.Inflight != 0 {
		t.Errorf("Stats() = %+v; want one quota shed, nothing in flight", st)
	}
	p, err := c.Acquire(context.Background(), admission.Request{Tenant: "under"})
	if err != nil {
		t.Fatalf("Acquire within quota = %v; want admitted", err)
	}
	p.Release()
}

func TestQuotaRetryAfterBounds(t *testing.T) {
	for _, tt := range []struct{ retry, want time.Duration }{
		{0, time.Second},
		{time.Millisecond, time.Second},
		{1001 * time.Millisecond, 2 * time.Second},
		{48 * time.Hour, time.Hour},
	} {
		c := newController(t, 1, admission.Options{Quota: &overQuota{retry: tt.retry}})
		_, err := c.Acquire(context.Background(), admission.Request{Tenant: "over"})
		if got := c.RetryAfterFor(err); got != tt.want {
			t.Errorf("retry %v: RetryAfterFor = %v; want %v", tt.retry, got, tt.want)
		}
	}
}

func TestMiddlewareQuota429(t *testing.T) {
	c := newController(t, 1, admission.Options{Quota: &overQuota{retry: 7 * time.Second}})
	reached := false
	h := (&admission.Middleware{Controller: c, Classify: func(r *http.Request) admission.Request {
		return admission.Request{Tenant: r.Header.Get("X-Tenant")}
	}}).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached = true
		io.WriteString(w, "ok")
	}))
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/", nil)
	req.Header.Set("X-Tenant", "over")
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "7" || rec.Header().Get("Sluice-Shed") != "quota" {
		t.Errorf("over quota: %d, Retry-After %q, Sluice-Shed %q; want 429, 7, quota", rec.Code, rec.Header().Get("Retry-After"), rec.Header().Get("Sluice-Shed"))
	}
	if reached {
		t.Error("the handler ran for a request over quota")
	}
}

func TestClassifyRuleQuota(t *testing.T) {
	cls := &admission.Classifier{Rules: []admission.Rule{{PathPrefix: "/search", Quota: "routes[0]"}, {}}}
	for path, want := range map[string]string{"/search?q=1": "routes[0]", "/": ""} {
		if got := cls.Classify(httptest.NewRequest("GET", path, nil)).Quota; got != want {
			t.Errorf("Classify(%s).Quota = %q; want %q", path, got, want)
		}
	}
}

func TestQuotaShedAllocatesNothing(t *testing.T) {
	c := newController(t, 1, admission.Options{Quota: allowNone{}})
	ctx := context.Background()
	req := admission.Request{Tenant: "over"}
	if n := testing.AllocsPerRun(100, func() { c.Acquire(ctx, req) }); n != 0 {
		t.Errorf("a quota shed allocates %v times; want 0", n)
	}
}

type allowNone struct{}

func (allowNone) Take(admission.Request) (bool, time.Duration) { return false, 1500 * time.Millisecond }
