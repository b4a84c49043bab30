package config_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// BenchmarkParse measures start-up cost: the example file, and the worst
// case the node budget allows (an alias bomb cut off at maxNodes).
func BenchmarkParse(b *testing.B) {
	example, err := os.ReadFile("../../examples/sluice.yaml")
	if err != nil {
		b.Fatal(err)
	}
	var bomb strings.Builder
	bomb.WriteString("x0: &m0 {a: 1}\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&bomb, "x%d: &m%d {<<: [*m%d, *m%d]}\n", i, i, i-1, i-1)
	}
	bomb.WriteString("tenants:\n  weights:\n    <<: *m40\n")
	for _, in := range []struct {
		name string
		data []byte
	}{
		{"example", example},
		{"alias-bomb", []byte(bomb.String())},
	} {
		b.Run(in.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				config.Parse("bench.yaml", in.data)
			}
		})
	}
}
