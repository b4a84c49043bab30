package config_test

import (
	"bytes"
	"os"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// FuzzParse checks that Parse never panics, and that its two outcomes are
// consistent: a config that validates, or a non-empty list of problems
// whose lines are in the file. The seeds run in every `go test`.
func FuzzParse(f *testing.F) {
	f.Add(config.DefaultYAML())
	if ex, err := os.ReadFile("../../examples/sluice.yaml"); err == nil {
		f.Add(ex)
	}
	for _, s := range []string{
		"",
		"server:\n  listen: 3000\n  keepAliveTimout: 5s\n",
		"server:\n  backpressure: {minLimit: 50, maxLimit: 10, eluMax: 2, saturationMax: 1}\n",
		"workers:\n  command: node w.js\n  count: auto\nupstreams:\n  servers: [\"a:1\", {address: \"unix:/s\"}]\n",
		"workers: {command: [a, b], count: 0, env: {A: 1, B: , C: [x]}}\n",
		"routes:\n  - &r {match: {method: GET, header: \"X: y\"}, priority: sheddable, fallback: {body: x, file: y}}\n  - <<: [*r, {cost: 2}]\n",
		"x0: &a {a: 1}\nx1: &b {<<: [*a, *a]}\ntenants: {weights: {<<: *b}}\n",
		"server: {trustedPeers: [10.0.0.0/8, \"::1\", nope], maxHeaderBytes: 1.5KiB, requestTimeout: 1e300}\n",
		"proxy: {maxBodyBytes: 9223372036854775807, timeout: -9223372036854775808}\n",
		"? [a]\n: 1\n",
		"a: !!binary aGVsbG8=\nserver: !custom {}\n",
		"server: {}\n---\n- x\n",
		"{{{{\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := config.Parse("fuzz.yaml", data)
		if err == nil {
			if cfg == nil {
				t.Fatal("got a nil config and no error")
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Parse accepted a config that Validate rejects: %v", err)
			}
			return
		}
		if cfg != nil {
			t.Fatalf("got a config with the error %v", err)
		}
		list := config.List(err)
		if len(list) == 0 {
			t.Fatalf("got %v, want a list of problems", err)
		}
		lines := bytes.Count(data, []byte("\n")) + 1
		for _, e := range list {
			if e.File != "fuzz.yaml" || e.Line < 0 || e.Line > lines+1 || e.Msg == "" {
				t.Fatalf("got problem %+v, want it in fuzz.yaml within %d lines", e, lines)
			}
		}
	})
}
