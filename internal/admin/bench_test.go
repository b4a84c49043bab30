package admin_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/admission/promadmission"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/limit"
)

// A whole /metrics scrape of the admission collector (histograms
// included) and a /stats request: the cost of watching.
func BenchmarkScrape(b *testing.B) {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(40), SampleWindow: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	for _, p := range admission.Priorities() {
		pm, _ := c.Acquire(context.Background(), admission.Request{Priority: p})
		pm.DoneSample(limit.Sample{Now: time.Now(), RTT: time.Millisecond})
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(promadmission.New(c, promadmission.Options{}))
	h := admin.Handler(admin.Options{Registry: reg, Stats: func() any {
		hs := c.Histograms()
		return admin.Snapshot{Admission: c.Stats(), Latency: admin.NewLatency(&hs)}
	}})
	for _, path := range []string{"/metrics", "/stats"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
			}
		})
	}
}
