package config

import (
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every key has its facts, each written in one valid tag, and the facts
// hold: a size is a number of bytes, and KeyOf finds what Keys lists.
func TestKeyFacts(t *testing.T) {
	valid := map[string][]string{"reload": {"live", "roll", "restart"}, "mode": {"front", "library"}, "form": {"size", "fields"}}
	seen := make(map[reflect.Type]bool)
	var check func(t0 reflect.Type)
	check = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice || typ.Kind() == reflect.Map {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || !hasKeys(typ) || seen[typ] {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			for tag, values := range valid {
				if v, ok := f.Tag.Lookup(tag); ok && !slices.Contains(values, v) {
					t.Errorf("%s.%s: %s:%q, want one of %q", typ.Name(), f.Name, tag, v, values)
				}
			}
			check(f.Type)
		}
	}
	check(reflect.TypeFor[Config]())

	keys := Keys()
	if len(keys) < 100 {
		t.Fatalf("Keys: got %d keys, want every key of the schema", len(keys))
	}
	for _, k := range keys {
		got, ok := KeyOf(k.Path)
		if !ok || got != k {
			t.Errorf("KeyOf(%q): got %+v, %v; want %+v", k.Path, got, ok, k)
		}
		f, _ := lookupType(k.Path)
		if isBytes := f.Kind() == reflect.Int64 && f != durationType; k.Size != isBytes {
			t.Errorf("%s: Size %v, want %v: every int64 key but a duration is a number of bytes, written with a unit or not", k.Path, k.Size, isBytes)
		}
	}
	for path, want := range map[string]Key{
		"routes[3].fallback.body":             {Path: "routes[].fallback.body", Reload: Live, Mode: FrontOnly},
		"routes[0].quota.rate":                {Path: "routes[].quota.rate", Reload: Restart},
		"routes[2]":                           {Path: "routes[]", Reload: Live},
		"server.backpressure.maxLimit":        {Path: "server.backpressure.maxLimit", Reload: Live, Mode: LibraryOnly},
		"workers.env":                         {Path: "workers.env", Reload: Roll, Mode: FrontOnly},
		"proxy.maxBodyBytes":                  {Path: "proxy.maxBodyBytes", Mode: FrontOnly, Size: true},
		"upstreams.servers[1].concurrency":    {Path: "upstreams.servers[].concurrency", Mode: FrontOnly},
		"server.backpressure.smoothingFactor": {Path: "server.backpressure.smoothingFactor"},
	} {
		if got, ok := KeyOf(path); !ok || got != want {
			t.Errorf("KeyOf(%q): got %+v, %v; want %+v", path, got, ok, want)
		}
	}
	for _, bad := range []string{"", "server.nope", "server.listen.x", "server[0]", "routes[0", "tenants.weights.acme"} {
		if k, ok := KeyOf(bad); ok {
			t.Errorf("KeyOf(%q): got %+v, want no key", bad, k)
		}
	}
}

// lookupType returns the Go type of the key at path ("routes[].cost").
func lookupType(path string) (reflect.Type, bool) {
	typ := reflect.TypeFor[Config]()
	for part := range strings.SplitSeq(path, ".") {
		name, elem := strings.CutSuffix(part, "[]")
		for typ.Kind() == reflect.Pointer {
			typ = typ.Elem()
		}
		i, ok := fieldByTag(typ, name)
		if !ok {
			return nil, false
		}
		typ = typ.Field(i).Type
		if elem {
			typ = typ.Elem()
		}
	}
	return typ, true
}

// docSection returns the section of docs/configuration.md under heading.
func docSection(t *testing.T, heading string) string {
	t.Helper()
	data, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(data), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("docs/configuration.md has no %q section", heading)
	}
	if i := strings.Index(section, "\n## "); i >= 0 {
		section = section[:i]
	}
	return section
}

// Every key a reload applies (the top of each part of the schema tagged
// live or roll) is named in docs/configuration.md's reload section.
func TestReloadKeysDocumented(t *testing.T) {
	section := docSection(t, "## Reload")
	class := make(map[string]Reload)
	for _, k := range Keys() {
		class[k.Path] = k.Reload
		if k.Reload != Restart && class[strings.TrimSuffix(parentPath(k.Path), "[]")] != k.Reload && !strings.Contains(section, "`"+k.Path+"`") {
			t.Errorf("the reload section does not name `%s`", k.Path)
		}
	}
}

// Every key that acts in one mode only is named in docs/configuration.md's
// table of keys that have no effect. A workers or upstreams section is
// front mode itself: it never goes unused.
func TestModeKeysDocumented(t *testing.T) {
	section := docSection(t, "## Keys that have no effect")
	keys := modeKeys()
	if len(keys) < 10 {
		t.Fatalf("got %d keys of one mode, want the proxy's and the library's limit's", len(keys))
	}
	for _, k := range keys {
		if k.Path == "workers" || k.Path == "upstreams" {
			continue
		}
		if !strings.Contains(section, "`"+k.Path+"`") {
			t.Errorf("the section on keys that have no effect does not name `%s`", k.Path)
		}
	}
}

// The front-mode defaults show every key but those of library mode, and a
// file made of them with workers added is quiet: no key there does
// nothing.
func TestDefaultFrontYAML(t *testing.T) {
	src := DefaultFrontYAML()
	cfg, err := Parse("front", src)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(cfg, Default()) {
		t.Errorf("DefaultFrontYAML parses to %+v, want Default()", cfg)
	}
	seen := pathsIn(t, "front", src)
	for _, k := range Keys() {
		if k.Mode == LibraryOnly && seen[k.Path] {
			t.Errorf("DefaultFrontYAML shows %s, which acts only in library mode", k.Path)
		}
		if k.Mode == BothModes && !strings.HasPrefix(k.Path, "routes") && !strings.HasPrefix(k.Path, "tenants.quota") && !seen[k.Path] {
			t.Errorf("DefaultFrontYAML does not show %s", k.Path)
		}
	}
	l, err := ParseWith("front", append(src, "workers: {command: w}\n"...), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) > 0 {
		t.Errorf("DefaultFrontYAML with workers: got warnings %v, want none", l.Warnings)
	}
}

func TestDropKeys(t *testing.T) {
	src := "a:\n  b: 1   # one\n       # its second line\n  c:\n    d: 2\n  e: 3\n# x:\nb: 4\n"
	got := string(dropKeys([]byte(src), map[string]bool{"a.b": true, "a.c": true, "b": false}))
	if want := "a:\n  e: 3\n# x:\nb: 4\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}
