package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteConfigAndRewrite(t *testing.T) {
	path := WriteConfig(t, "a: 1\n")
	if filepath.Base(path) != "sluice.yaml" {
		t.Errorf("path %s, want a sluice.yaml", path)
	}
	Rewrite(t, path, "b: 2\n")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "b: 2\n" {
		t.Errorf("read %q, %v; want the rewritten content", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600 (a config may hold secrets)", fi.Mode().Perm(), err)
	}
}
