package config_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

func TestDefaultYAMLParsesToDefault(t *testing.T) {
	got, err := config.Parse("defaults.yaml", config.DefaultYAML())
	if err != nil {
		t.Fatalf("Parse(DefaultYAML()): %v", err)
	}
	if want := config.Default(); !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestExampleFileValidates(t *testing.T) {
	cfg, err := config.Load("../../examples/sluice.yaml")
	if err != nil {
		t.Fatalf("examples/sluice.yaml: %v", err)
	}
	// The example sets values other than the defaults, and the Node.js
	// server's spelling of them (eluMax).
	if cfg.Workers == nil || cfg.Server.Backpressure.SaturationMax != 0.9 || len(cfg.Routes) == 0 {
		t.Errorf("got %+v, want workers, eluMax 0.9 and routes from the example", cfg)
	}
}

func writeFile(t *testing.T, dir, name, src string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolve(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)

	// No flag, no ./sluice.yaml: the built-in defaults.
	cfg, source, err := config.Resolve("")
	if err != nil || source != "" || !reflect.DeepEqual(cfg, config.Default()) {
		t.Errorf("no file: got %v, %q, %v; want the defaults, \"\", nil", cfg, source, err)
	}

	// ./sluice.yaml is read when present.
	writeFile(t, dir, config.DefaultFile, "server:\n  listen: \":4000\"\n")
	cfg, source, err = config.Resolve("")
	if err != nil || source != config.DefaultFile || cfg.Server.Listen != ":4000" {
		t.Errorf("./sluice.yaml: got listen %q, %q, %v; want \":4000\", %q, nil", listen(cfg), source, err, config.DefaultFile)
	}

	// An explicit path wins over ./sluice.yaml.
	other := writeFile(t, dir, "other.yaml", "server:\n  listen: \":5000\"\n")
	cfg, source, err = config.Resolve(other)
	if err != nil || source != other || cfg.Server.Listen != ":5000" {
		t.Errorf("explicit: got listen %q, %q, %v; want \":5000\", %q, nil", listen(cfg), source, err, other)
	}

	// An explicit path that does not exist is an error, not the defaults.
	_, source, err = config.Resolve(filepath.Join(dir, "missing.yaml"))
	if !errors.Is(err, fs.ErrNotExist) || source == "" {
		t.Errorf("missing explicit file: got %q, %v; want its name and fs.ErrNotExist", source, err)
	}

	// A bad ./sluice.yaml is reported under its name.
	writeFile(t, dir, config.DefaultFile, "server:\n  listen: 1\n")
	_, _, err = config.Resolve("")
	if list := config.List(err); len(list) != 1 || list[0].File != config.DefaultFile || list[0].Line != 2 {
		t.Errorf("bad ./sluice.yaml: got %v, want one error at %s:2", err, config.DefaultFile)
	}
}

func listen(c *config.Config) string {
	if c == nil {
		return "<nil>"
	}
	return c.Server.Listen
}
