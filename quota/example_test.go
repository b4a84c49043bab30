package quota_test

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/quota"
)

// A Go service limiting each API key to 10 requests a second. With
// several instances, share a redisquota.Store instead of the MemoryStore.
func Example() {
	l, err := quota.New(quota.Options{
		Store: quota.NewMemoryStore(),
		Limit: quota.Limit{Rate: 10, Burst: 4},
		// The default 100 ms would do; a minute keeps this example's
		// output from depending on when the first lease comes.
		Interval: time.Minute,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go l.Run(ctx) // the leases, off every request's path

	c, err := admission.New(admission.Options{Quota: l})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	h := (&admission.Middleware{Controller: c, Classify: func(r *http.Request) admission.Request {
		return admission.Request{Tenant: r.Header.Get("X-Api-Key")}
	}}).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))

	for range 2 {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("GET", "/", nil)
		req.Header.Set("X-Api-Key", "k1")
		h.ServeHTTP(rec, req)
		fmt.Printf("%d %s\n", rec.Code, cmp.Or(rec.Header().Get("Sluice-Shed"), "-"))
	}
	// Output:
	// 200 -
	// 429 quota
}
