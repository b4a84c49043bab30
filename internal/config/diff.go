package config

import (
	"fmt"
	"reflect"
)

// Diff returns the dotted paths of the keys whose values differ between a
// and b, in the order of the structs' fields: what a reload of the file
// would change. The paths are those of errors and warnings
// ("server.backpressure.queueSize", "routes[1].priority").
//
// A section or list element present on one side only is reported as one
// path, the section's ("workers", "routes[2]", "routes[0].fallback"); so is
// a whole list of plain values or a map ("workers.command",
// "tenants.weights"), whose parts have no key of their own. Neither config
// is modified.
func Diff(a, b *Config) []string {
	var out []string
	diffValue(reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem(), "", &out)
	return out
}

func diffValue(a, b reflect.Value, path string, out *[]string) {
	switch {
	case a.Kind() == reflect.Pointer:
		if a.IsNil() || b.IsNil() {
			if a.IsNil() != b.IsNil() {
				*out = append(*out, path)
			}
			return
		}
		diffValue(a.Elem(), b.Elem(), path, out)
	case a.Kind() == reflect.Struct && hasKeys(a.Type()):
		t := a.Type()
		for i := range t.NumField() {
			name := t.Field(i).Tag.Get("yaml")
			if name == "" || name == "-" {
				continue
			}
			p := name
			if path != "" {
				p = path + "." + name
			}
			diffValue(a.Field(i), b.Field(i), p, out)
		}
	case a.Kind() == reflect.Slice && a.Type().Elem().Kind() == reflect.Struct && hasKeys(a.Type().Elem()):
		for i := range max(a.Len(), b.Len()) {
			p := fmt.Sprintf("%s[%d]", path, i)
			if i >= a.Len() || i >= b.Len() {
				*out = append(*out, p)
				continue
			}
			diffValue(a.Index(i), b.Index(i), p, out)
		}
	default:
		// A plain value, a list of plain values, a map: compared whole. A
		// nil list and an empty one ask for the same thing.
		if (a.Kind() == reflect.Slice || a.Kind() == reflect.Map) && a.Len() == 0 && b.Len() == 0 {
			return
		}
		if !reflect.DeepEqual(a.Interface(), b.Interface()) {
			*out = append(*out, path)
		}
	}
}

// hasKeys reports whether t is a section of the file (a struct with yaml
// keys), not a value that happens to be a struct (netip.Prefix).
func hasKeys(t reflect.Type) bool {
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") != "" {
			return true
		}
	}
	return false
}
