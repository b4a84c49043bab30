package config_test

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
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
	l, err := config.ResolveWith("../../examples/sluice.yaml", config.Overrides{})
	if err != nil {
		t.Fatalf("examples/sluice.yaml: %v", err)
	}
	cfg := l.Config
	// The example sets values other than the defaults.
	if cfg.Workers == nil || cfg.Proxy.SaturationMax != 0.9 || len(cfg.Routes) == 0 {
		t.Errorf("got %+v, want workers, proxy.saturationMax 0.9 and routes from the example", cfg)
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

func TestResolveWith(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	resolve := func(path string) (*config.Config, string, error) {
		l, err := config.ResolveWith(path, config.Overrides{})
		if err != nil {
			return nil, "", err
		}
		return l.Config, l.Source, nil
	}

	// No flag, no ./sluice.yaml: the built-in defaults.
	cfg, source, err := resolve("")
	if err != nil || source != "" || !reflect.DeepEqual(cfg, config.Default()) {
		t.Errorf("no file: got %v, %q, %v; want the defaults, \"\", nil", cfg, source, err)
	}

	// ./sluice.yaml is read when present.
	writeFile(t, dir, config.DefaultFile, "server:\n  listen: \":4000\"\n")
	cfg, source, err = resolve("")
	if err != nil || source != config.DefaultFile || cfg.Server.Listen != ":4000" {
		t.Errorf("./sluice.yaml: got listen %q, %q, %v; want \":4000\", %q, nil", listen(cfg), source, err, config.DefaultFile)
	}

	// An explicit path wins over ./sluice.yaml.
	other := writeFile(t, dir, "other.yaml", "server:\n  listen: \":5000\"\n")
	cfg, source, err = resolve(other)
	if err != nil || source != other || cfg.Server.Listen != ":5000" {
		t.Errorf("explicit: got listen %q, %q, %v; want \":5000\", %q, nil", listen(cfg), source, err, other)
	}

	// An explicit path that does not exist is an error, not the defaults.
	missing := filepath.Join(dir, "missing.yaml")
	_, _, err = resolve(missing)
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(fmt.Sprint(err), missing) {
		t.Errorf("missing explicit file: got %v; want fs.ErrNotExist naming %s", err, missing)
	}

	// A bad ./sluice.yaml is reported under its name.
	writeFile(t, dir, config.DefaultFile, "server:\n  listen: 1\n")
	_, _, err = resolve("")
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
