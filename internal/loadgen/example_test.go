package loadgen_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// Offer 100 requests per second for a fifth of a second to a server that
// sheds its expensive requests, and read the report per query class.
func ExampleRun() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("cpu") == "50" {
			w.Header().Set("Sluice-Shed", "queue-full")
			w.Header().Set("Retry-After", "1")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()

	rep, err := loadgen.Run(context.Background(), loadgen.Config{
		URL:          srv.URL,
		Phases:       []loadgen.Phase{{Rate: 100, Duration: 200 * time.Millisecond}},
		QueryMix:     []loadgen.Weighted{{Value: "cpu=5", Weight: 3}, {Value: "cpu=50", Weight: 1}},
		Seed:         1,
		LoopbackOnly: true,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("offered %.0f/s, %d requests\n", rep.Total.OfferedRate, rep.Total.Requests)
	for _, c := range rep.Classes {
		fmt.Printf("%s: %d requests, %d successes, errors %v\n", c.Name, c.Stats.Requests, c.Stats.Successes, c.Stats.Errors)
	}
	// Output:
	// offered 100/s, 20 requests
	// query=cpu=5: 16 requests, 16 successes, errors map[]
	// query=cpu=50: 4 requests, 0 successes, errors map[503:queue-full:4]
}

// A load step from 100/s to 400/s and back, and a linear ramp.
func ExampleParsePhases() {
	steps, _ := loadgen.ParsePhases("100:10s,400:10s,100:10s")
	ramp, _ := loadgen.ParsePhases("100->800:30s")
	fmt.Printf("%+v\n%+v\n", steps, ramp)
	// Output:
	// [{Name: Rate:100 RampTo:0 Duration:10s} {Name: Rate:400 RampTo:0 Duration:10s} {Name: Rate:100 RampTo:0 Duration:10s}]
	// [{Name: Rate:100 RampTo:800 Duration:30s}]
}

func ExampleHistogram() {
	var h loadgen.Histogram
	for ms := 1; ms <= 100; ms++ {
		h.Record(time.Duration(ms) * time.Millisecond)
	}
	fmt.Println(h.Count(), h.Quantile(0.5).Round(time.Millisecond), h.Quantile(0.99).Round(time.Millisecond), h.Max())
	// Output: 100 50ms 99ms 100ms
}
