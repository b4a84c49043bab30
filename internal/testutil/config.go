package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// WriteConfig writes yaml to a sluice.yaml in a new temporary directory of
// tb's and returns its path.
func WriteConfig(tb testing.TB, yaml string) string {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "sluice.yaml")
	Rewrite(tb, path, yaml)
	return path
}

// Rewrite replaces the file at path with content, as an operator editing
// a config before a reload would.
func Rewrite(tb testing.TB, path, content string) {
	tb.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
}
