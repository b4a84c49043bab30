package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"
)

// outside lists the trees that measure sluice from outside: the evaluation
// suite and the peer benchmarks' module. They import the product; the
// product never imports them.
var outside = []string{
	"github.com/sluicehq/sluice/internal/eval",
	"github.com/sluicehq/sluice/peers",
}

// isOutside reports whether the import path pkg is in one of the outside
// trees.
func isOutside(pkg string) bool {
	for _, root := range outside {
		if pkg == root || strings.HasPrefix(pkg, root+"/") {
			return true
		}
	}
	return false
}

// The binary links its dependencies and nothing else: what `go list -deps`
// prints for this package is what the linker is given.
func TestBinaryLinksNoEvaluation(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			t.Fatalf("go list: %v\n%s", err, ee.Stderr)
		}
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	const cli = "github.com/sluicehq/sluice/internal/cli"
	found := false
	for _, pkg := range deps {
		found = found || pkg == cli
		if isOutside(pkg) {
			t.Errorf("the sluice binary links %s, which measures sluice from outside", pkg)
		}
	}
	if !found {
		t.Fatalf("go list found no %s among the %d dependencies: %q", cli, len(deps), deps)
	}
}

func TestIsOutside(t *testing.T) {
	for _, tt := range []struct {
		pkg  string
		want bool
	}{
		{"github.com/sluicehq/sluice/internal/eval", true},
		{"github.com/sluicehq/sluice/internal/eval/cmd/eval", true},
		{"github.com/sluicehq/sluice/peers", true},
		{"github.com/sluicehq/sluice/internal/evaluate", false},
		{"github.com/sluicehq/sluice/internal/demo", false},
		{"github.com/sluicehq/sluice/internal/loadgen", false},
	} {
		if got := isOutside(tt.pkg); got != tt.want {
			t.Errorf("isOutside(%q) = %v, want %v", tt.pkg, got, tt.want)
		}
	}
}
