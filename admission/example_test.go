package admission_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// Wrap a handler: at most 100 requests run at once, 100 more wait up to
// 5 s, the rest get 503 with Retry-After and Sluice-Shed.
func ExampleMiddleware() {
	c, err := admission.New(admission.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()

	m := &admission.Middleware{
		Controller: c,
		Classify: func(r *http.Request) admission.Request {
			if r.URL.Path == "/checkout" {
				return admission.Request{Priority: admission.CriticalPlus}
			}
			return admission.Request{}
		},
	}
	h := m.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "hello\n")
	}))

	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/checkout", nil))
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output: 200 hello
}

// Use the Controller directly around any unit of work.
func ExampleController_Acquire() {
	c, err := admission.New(admission.Options{QueueSize: -1}) // no queue: shed at once
	if err != nil {
		panic(err)
	}
	defer c.Close()

	ctx := context.Background()
	p, err := c.Acquire(ctx, admission.Request{Cost: 100})
	if err != nil {
		panic(err)
	}
	_, err = c.Acquire(ctx, admission.Request{})
	var shed *admission.ShedError
	fmt.Println(errors.As(err, &shed), shed.Reason)

	start := time.Now()
	// ... the work ...
	p.DoneSample(limit.Sample{Now: time.Now(), RTT: time.Since(start)})
	fmt.Println(c.Stats().Inflight)
	// Output:
	// true limit
	// 0
}

// A classifier of another protocol reads a trusted peer's values as
// Classifier reads the headers: here a route's 2 s timeout, a caller with
// 500 ms left, and one asking for more time than the route allows.
func ExampleApplyTrusted() {
	p, d := admission.ApplyTrusted(admission.Sheddable, 2*time.Second, "critical", "500")
	fmt.Println(p, d)
	p, d = admission.ApplyTrusted(admission.Sheddable, 2*time.Second, "urgent", "60000")
	fmt.Println(p, d)
	// Output:
	// critical 500ms
	// sheddable 2s
}
