package admin

import (
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// NewBuildInfoCollector returns the build-info gauge, always 1, whose
// labels say what runs: with namespace "sluice",
// sluice_build_info{version, goversion, revision}. version is the
// release ("" means the module version from the build info, or "(devel)");
// revision is the VCS commit the binary was built from, "-dirty" appended
// when the tree had changes, "unknown" when it was not recorded.
func NewBuildInfoCollector(namespace, version string) prometheus.Collector {
	revision := "unknown"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if version == "" {
			version = bi.Main.Version
		}
		revision = buildRevision(bi.Settings)
	}
	if version == "" {
		version = "(devel)"
	}
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: namespace,
		Name:      "build_info",
		Help:      "Always 1; the labels say which build of sluice is running.",
		ConstLabels: prometheus.Labels{
			"version":   version,
			"goversion": runtime.Version(),
			"revision":  revision,
		},
	})
	g.Set(1)
	return g
}

// buildRevision reads the commit from the VCS stamps of a build.
func buildRevision(settings []debug.BuildSetting) string {
	rev, dirty := "unknown", false
	for _, s := range settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && rev != "unknown" {
		rev += "-dirty"
	}
	return rev
}
