package admin_test

import (
	"regexp"
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/admission/promadmission"
	"github.com/sluicehq/sluice/internal/admin"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/quota"
	"github.com/sluicehq/sluice/server"
)

type emptySource struct{}

func (emptySource) Stats() admission.Stats           { return admission.Stats{} }
func (emptySource) Histograms() admission.Histograms { return admission.Histograms{} }

// MetricNames is exactly what the collectors sluice registers describe.
func TestMetricNames(t *testing.T) {
	var rs admin.Responses
	cs := []prometheus.Collector{
		promadmission.New(emptySource{}, promadmission.Options{}),
		admin.NewConnCollector("sluice", func() server.ConnStats { return server.ConnStats{} }),
		rs.Collector("sluice"),
		admin.NewBuildInfoCollector("sluice", ""),
		admin.NewFrontCollector("sluice", admin.FrontSources{
			Proxy:      func() proxy.Stats { return proxy.Stats{} },
			Supervisor: func() supervisor.Stats { return supervisor.Stats{} },
			Upstreams:  func() supervisor.StaticStats { return supervisor.StaticStats{} },
		}),
		admin.NewQuotaCollector("sluice", func() quota.Stats { return quota.Stats{} }),
	}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	var described []string
	for _, c := range cs {
		ch := make(chan *prometheus.Desc, 100)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			described = append(described, fqName.FindStringSubmatch(d.String())[1])
		}
	}
	slices.Sort(described)
	want := slices.Sorted(slices.Values(admin.MetricNames))
	if !slices.Equal(described, want) {
		t.Errorf("described:\n%v\nMetricNames:\n%v", described, want)
	}
	seen := map[string]bool{}
	for _, n := range admin.MetricNames {
		if seen[n] {
			t.Errorf("%s listed twice", n)
		}
		seen[n] = true
	}
}
