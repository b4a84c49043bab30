package config_test

import (
	"net/netip"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

func TestDiff(t *testing.T) {
	const base = `
server:
  listen: ":3000"
  trustedPeers: [10.0.0.0/8]
workers:
  command: [node, a.js]
  env: {A: "1"}
routes:
  - match: {pathPrefix: /api}
    priority: sheddable
  - match: {pathPrefix: /}
    fallback: {body: shell}
`
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"same file", base, nil},
		{"a scalar", replace(base, `listen: ":3000"`, `listen: ":3001"`), []string{"server.listen"}},
		{"a list of values, whole", replace(base, "[node, a.js]", "[node, b.js]"), []string{"workers.command"}},
		{"a map, whole", replace(base, `{A: "1"}`, `{A: "2"}`), []string{"workers.env"}},
		{"prefixes compared by value", replace(base, "10.0.0.0/8", "10.0.0.0/16"), []string{"server.trustedPeers"}},
		{"inside a list element", replace(base, "priority: sheddable", "priority: critical"), []string{"routes[0].priority"}},
		{"inside an optional section", replace(base, "body: shell", "body: other"), []string{"routes[1].fallback.body"}},
		{"an element added", base + "  - match: {pathPrefix: /x}\n", []string{"routes[2]"}},
		{"a section removed", replace(base, "workers:\n  command: [node, a.js]\n  env: {A: \"1\"}\n", ""), []string{"workers"}},
		{"a default spelled out", base + "tenants: {maxTracked: 10000}\n", nil},
	}
	a := mustParse(t, base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := mustParse(t, tt.src)
			if got := config.Diff(a, b); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			if got := config.Diff(b, a); !slices.Equal(got, tt.want) {
				t.Errorf("reversed: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestDiffEmptyListIsNil(t *testing.T) {
	a, b := config.Default(), config.Default()
	a.Server.TrustedPeers = nil
	b.Server.TrustedPeers = []netip.Prefix{}
	if got := config.Diff(a, b); len(got) != 0 {
		t.Errorf("got %q, want no difference between a nil and an empty list", got)
	}
}

func replace(s, old, new string) string { return strings.Replace(s, old, new, 1) }
