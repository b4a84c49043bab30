package admin_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/admin"
)

// A whole /metrics scrape of the admission collector and a /stats
// request: the cost of watching.
func BenchmarkScrape(b *testing.B) {
	stats := admission.Stats{Limit: 40, Inflight: 12, Saturation: 0.3, Latency: time.Millisecond,
		Shed: shed(admission.ReasonQueueFull, 5, admission.ReasonCoDel, 2)}
	reg := prometheus.NewRegistry()
	reg.MustRegister(admin.NewAdmissionCollector("sluice", func() admission.Stats { return stats }))
	h := admin.Handler(admin.Options{Registry: reg, Stats: func() any { return admin.Snapshot{Admission: stats} }})
	for _, path := range []string{"/metrics", "/stats"} {
		b.Run(path, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", path, nil))
			}
		})
	}
}
