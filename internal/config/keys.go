package config

import (
	"fmt"
	"reflect"
	"strings"
)

// What sluice needs to know of a key beyond its type is written once, as
// tags on its field, and read from there by the validator (which keys have
// no effect in a mode), the reload (which keys apply while serving) and the
// decoder (which numbers are sizes):
//
//	reload:"live"     a reload applies it while requests are served
//	reload:"roll"     a reload applies it to the workers started from then
//	                  on, and rolls the workers
//	reload:"restart"  it needs a restart, though a section above it is live
//	mode:"front"      it acts only in front mode (workers or upstreams)
//	mode:"library"    it acts only in library mode (neither)
//	form:"size"       a size in bytes, written with a unit or without
//
// A tag on a section holds for every key below it, unless a key's own tag
// says otherwise. A key untagged, with no tagged section above it, needs a
// restart and acts in both modes. Which keys turn each other off (no queue,
// no CoDel) is a rule between values, in effect.go, not a fact of one key.

// Reload says what a reload does with a key whose value changed.
type Reload int

const (
	// Restart: the running value is kept until sluice restarts.
	Restart Reload = iota
	// Live: applied while requests are served.
	Live
	// Roll: applied to the workers started from now on; the workers are
	// rolled.
	Roll
)

// Mode is the mode in which a key acts.
type Mode int

const (
	// BothModes: the key acts whether or not sluice fronts workers.
	BothModes Mode = iota
	// FrontOnly: the key acts only with workers or upstreams.
	FrontOnly
	// LibraryOnly: the key acts only without workers or upstreams.
	LibraryOnly
)

// Key is what the schema says of one key.
type Key struct {
	// Path is the key's dotted path, with list elements written []
	// ("routes[].match.method").
	Path   string
	Reload Reload
	Mode   Mode
	// Size: the key is a number of bytes (form:"size").
	Size bool
}

var (
	reloadTags = map[string]Reload{"restart": Restart, "live": Live, "roll": Roll}
	modeTags   = map[string]Mode{"front": FrontOnly, "library": LibraryOnly}
)

// Keys returns every key of the schema, sections and lists included, in
// the order of the structs' fields.
func Keys() []Key {
	var out []Key
	var walk func(k Key, t reflect.Type)
	walk = func(k Key, t reflect.Type) {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if k.Path != "" {
			out = append(out, k)
		}
		switch {
		case t.Kind() == reflect.Struct && hasKeys(t):
			for i := range t.NumField() {
				if f := t.Field(i); keyName(f) != "" {
					walk(fieldKey(k, f), f.Type)
				}
			}
		case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && hasKeys(t.Elem()):
			elem := k
			elem.Path += "[]"
			for i := range t.Elem().NumField() {
				if f := t.Elem().Field(i); keyName(f) != "" {
					walk(fieldKey(elem, f), f.Type)
				}
			}
		}
	}
	walk(Key{}, reflect.TypeFor[Config]())
	return out
}

// KeyOf returns the facts of the key at path, list indexes written as
// numbers ("routes[2].priority") or not ("routes[].priority"); a list
// element ("routes[2]") is its list's. It reports false for a path the
// schema does not have.
func KeyOf(path string) (Key, bool) {
	k := Key{}
	t := reflect.TypeFor[Config]()
	for part := range strings.SplitSeq(path, ".") {
		name, elem := part, false
		if i := strings.IndexByte(part, '['); i >= 0 {
			name, elem = part[:i], true
			if !strings.HasSuffix(part, "]") {
				return Key{}, false
			}
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || !hasKeys(t) {
			return Key{}, false
		}
		f, ok := fieldNamed(t, name)
		if !ok {
			return Key{}, false
		}
		k = fieldKey(k, f)
		t = f.Type
		if elem {
			if t.Kind() != reflect.Slice {
				return Key{}, false
			}
			k.Path += "[]"
			t = t.Elem()
		}
	}
	return k, true
}

// fieldKey is the key of field f below parent: f's own tags, else those
// parent inherited.
func fieldKey(parent Key, f reflect.StructField) Key {
	k := Key{Path: join(parent.Path, keyName(f)), Reload: parent.Reload, Mode: parent.Mode}
	if tag, ok := f.Tag.Lookup("reload"); ok {
		k.Reload = mustTag(reloadTags, tag, f)
	}
	if tag, ok := f.Tag.Lookup("mode"); ok {
		k.Mode = mustTag(modeTags, tag, f)
	}
	k.Size = f.Tag.Get("form") == "size"
	return k
}

// mustTag returns the fact tag names. An unknown name is a mistake in this
// package's structs, not in a file (TestKeyFacts finds it).
func mustTag[T any](names map[string]T, tag string, f reflect.StructField) T {
	v, ok := names[tag]
	if !ok {
		panic(fmt.Sprintf("config: field %s: unknown tag value %q", f.Name, tag))
	}
	return v
}

func keyName(f reflect.StructField) string {
	if name := f.Tag.Get("yaml"); name != "-" {
		return name
	}
	return ""
}

func fieldNamed(t reflect.Type, name string) (reflect.StructField, bool) {
	if i, ok := fieldByTag(t, name); ok {
		return t.Field(i), true
	}
	return reflect.StructField{}, false
}

// parentPath returns the path of the key that holds path: "routes[2]" for
// "routes[2].fallback", "" for a top-level section.
func parentPath(path string) string {
	if i := strings.LastIndexByte(path, '.'); i >= 0 {
		return path[:i]
	}
	return ""
}

// modeKeys returns the keys whose mode is set on their own field rather
// than inherited from their section: each names where its region of the
// schema begins.
func modeKeys() []Key {
	var out []Key
	parent := make(map[string]Mode)
	for _, k := range Keys() {
		parent[k.Path] = k.Mode
		if k.Mode != BothModes && parent[strings.TrimSuffix(parentPath(k.Path), "[]")] != k.Mode {
			out = append(out, k)
		}
	}
	return out
}

// expand returns the concrete paths of key in c: each "[]" becomes every
// index of that list in c ("routes[].fallback" gives "routes[0].fallback",
// "routes[1].fallback", ...). A key below a nil section gives nothing.
func expand(c *Config, key string) []string {
	before, after, ok := strings.Cut(key, "[]")
	if !ok {
		if _, ok := lookup(reflect.ValueOf(c).Elem(), key); !ok {
			return nil
		}
		return []string{key}
	}
	list, ok := lookup(reflect.ValueOf(c).Elem(), before)
	if !ok || list.Kind() != reflect.Slice {
		return nil
	}
	var out []string
	for i := range list.Len() {
		out = append(out, expand(c, fmt.Sprintf("%s[%d]%s", before, i, after))...)
	}
	return out
}
