package config

import (
	"fmt"
	"reflect"
	"strings"
)

// A configuration never lies: a key the file sets that changes nothing,
// because of the mode sluice runs in or because another key turns off what
// it tunes, is reported rather than silently ignored.
//
// The two kinds of report, and why:
//
//   - A warning (file:line: warning: key: why) for a key that is valid but
//     has no effect here: the file still describes a working sluice, and the
//     same file often serves two modes (tuned for the library face, then
//     given workers), so refusing to start would be out of proportion. The
//     warning goes to stderr from sluice validate and to the log at start;
//     sluice validate --strict makes it an error.
//   - An error for a contradiction between keys side by side, where sluice
//     cannot honour both (validate.go: maxConcurrency beside a fixed
//     concurrency, a worker command in the file and on the command line).
//
// Only keys written in the file count, and only with a value other than
// their default: a key spelled out at its default, as sluice validate
// --print-defaults writes every key, asks for nothing sluice does not do
// anyway. A Config built in Go has no file, so it never warns.
//
// The modes: front mode (workers or upstreams) dispatches to worker slots,
// each worker with its own limit (fixed, or found at run time with
// concurrency: auto) under one Controller whose own limit is only the hard
// cap server.maxConcurrentRequests; library mode (neither) runs the
// configured backpressure algorithm over sluice's own saturation and serves
// the embedded app in-process, so nothing is proxied.

// warnf reports path as a warning when the file wrote it with a value other
// than its default. One warning per key: the first rule that matches says
// why.
func (v *validator) warnf(c *Config, path, format string, args ...any) {
	if !v.set(path) || v.skipped(path) || v.warned[path] || atDefault(c, path) {
		return
	}
	if v.warned == nil {
		v.warned = make(map[string]bool)
	}
	v.warned[path] = true
	v.warns = append(v.warns, &Error{File: v.file, Line: v.line(path), Path: path, Msg: fmt.Sprintf(format, args...), Warning: true})
}

// obsoletef reports path as a warning whenever the file wrote it, at its
// default or not: a key kept only so that old files load.
func (v *validator) obsoletef(c *Config, path, why string) {
	if !v.set(path) || v.skipped(path) || v.warned[path] {
		return
	}
	if v.warned == nil {
		v.warned = make(map[string]bool)
	}
	v.warned[path] = true
	v.warns = append(v.warns, &Error{File: v.file, Line: v.line(path), Path: path, Msg: why, Warning: true})
}

// removedKeys are keys the file no longer has, by path, with why: a file
// that writes one still loads, and is warned that it does nothing. They
// are in no struct, so in no default and no diff.
var removedKeys = map[string]string{
	"proxy.retryIdempotent": "has no effect and is deprecated: a request is sent to another worker only when none of it reached the first (one poisonous request must not kill two workers); remove the key",
}

// effects reports the keys that have no effect (see above).
func (v *validator) effects(c *Config) {
	for _, path := range sortedKeys(removedKeys) {
		v.obsoletef(c, path, removedKeys[path])
	}
	const bp = "server.backpressure."
	b := &c.Server.Backpressure
	v.modes(c)
	if c.FrontMode() {
		v.warnf(c, bp+"sampleWindow", "only sets how often shed counts are logged %s: each worker's limit is recomputed on a window of its own", frontMode(c))
		if !anyAdaptive(c) {
			v.warnf(c, "proxy.saturationMax", "has no effect %s at a fixed concurrency: it is the saturation each worker's adaptive limit keeps under with concurrency: auto", frontMode(c))
		}
	}
	if !b.Enabled {
		const why = "has no effect with server.backpressure.enabled false: "
		v.warnf(c, bp+"queueSize", why+"there is no queue, excess is shed at once")
		v.warnf(c, bp+"queueTimeout", why+"there is no queue, excess is shed at once")
		if !c.FrontMode() {
			for _, k := range modeKeys() {
				if k.Mode == LibraryOnly && strings.HasPrefix(k.Path, bp) {
					v.warnf(c, k.Path, why+"only server.maxConcurrentRequests limits")
				}
			}
			v.warnf(c, bp+"sampleWindow", why+"only server.maxConcurrentRequests limits")
		}
	}
	if !b.Enabled || b.QueueSize == 0 {
		const why = "has no effect without a queue (server.backpressure.enabled false or queueSize 0): nothing waits"
		for _, k := range []string{bp + "queueTimeout", "overload.priorityMinShare", "overload.codel.enabled", "overload.codel.target", "overload.codel.interval", "overload.adaptiveLifo", "tenants.maxQueuedPerTenant"} {
			v.warnf(c, k, "%s", why)
		}
	}
	if !c.Overload.CoDel.Enabled {
		const why = "has no effect with overload.codel.enabled false"
		v.warnf(c, "overload.codel.target", why)
		v.warnf(c, "overload.codel.interval", why)
		v.warnf(c, "overload.adaptiveLifo", why+": the newest is served first only while CoDel finds a standing queue")
	}
	if !c.Compression.Enabled {
		const why = "has no effect with compression.enabled false"
		for _, k := range []string{"minLength", "types", "encodings", "gzipLevel", "brotliLevel"} {
			v.warnf(c, "compression."+k, why)
		}
	}
	if w := c.Workers; w != nil && w.WarmupRequests == 0 && w.WarmupPath != "" {
		v.warnf(c, "workers.warmupPath", "has no effect with warmupRequests 0: no warm-up request is sent")
	}
}

// saturationAlias makes server.backpressure.saturationMax (or eluMax),
// written in front mode, stand for proxy.saturationMax, with a warning
// naming both: a file written for the Node.js server, where one key tunes
// the process and its workers alike, keeps its workers' threshold. Written
// beside proxy.saturationMax it is unused, and says so.
func (v *validator) saturationAlias(c *Config) {
	const old, key = "server.backpressure.saturationMax", "proxy.saturationMax"
	if s := c.Server.Backpressure.SaturationMax; !c.FrontMode() || !v.set(old) || atDefault(c, old) || !(s > 0 && s <= 1) {
		return
	}
	if v.set(key) {
		v.obsoletef(c, old, "has no effect "+frontMode(c)+": proxy.saturationMax, also written, sets each adaptive worker's limit")
		return
	}
	c.Proxy.SaturationMax = c.Server.Backpressure.SaturationMax
	v.obsoletef(c, old, "is deprecated "+frontMode(c)+": it is taken for proxy.saturationMax, the saturation each adaptive worker's limit keeps under; write that key instead")
}

// modes reports the keys the file writes that act only in the other mode
// (their mode tag, keys.go).
func (v *validator) modes(c *Config) {
	for _, k := range modeKeys() {
		var why string
		switch {
		case k.Mode == LibraryOnly && c.FrontMode():
			why = fmt.Sprintf("has no effect %s: each worker has its own limit (its concurrency: a number, or auto to find it at run time from the worker's saturation), and server.maxConcurrentRequests caps the total", frontMode(c))
		case k.Mode == FrontOnly && !c.FrontMode():
			why = "has no effect without workers or upstreams: nothing is proxied (sluice serves its embedded app in-process), and it tunes the proxy"
		default:
			continue
		}
		for _, p := range expand(c, k.Path) {
			v.warnf(c, p, "%s", why)
		}
	}
}

// frontMode names the front mode c is in, for a message.
func frontMode(c *Config) string {
	if c.Workers == nil {
		return "with upstreams"
	}
	return "with workers"
}

// anyAdaptive reports whether some worker or upstream has concurrency auto.
func anyAdaptive(c *Config) bool {
	if c.Workers != nil && c.Workers.Concurrency.Auto() {
		return true
	}
	if c.Upstreams != nil {
		for _, s := range c.Upstreams.Servers {
			if s.Concurrency.Auto() {
				return true
			}
		}
	}
	return false
}

// atDefault reports whether the value at path in c equals its default. The
// default of a key inside an optional section or a list element (absent
// from Default) is its zero value, so such a key counts as set unless it is
// zero: the rules above ask only about keys whose zero is their default.
func atDefault(c *Config, path string) bool {
	got, ok := lookup(reflect.ValueOf(c).Elem(), path)
	if !ok {
		return false
	}
	def, ok := lookup(reflect.ValueOf(Default()).Elem(), path)
	if !ok {
		return got.IsZero()
	}
	return reflect.DeepEqual(got.Interface(), def.Interface())
}

// lookup follows a dotted path ("server.backpressure.minLimit",
// "routes[2].fallback") through v by yaml tags. It reports false for a nil
// section or an index out of range.
func lookup(v reflect.Value, path string) (reflect.Value, bool) {
	for part := range strings.SplitSeq(path, ".") {
		name, index := part, -1
		if i := strings.IndexByte(part, '['); i >= 0 {
			name = part[:i]
			if _, err := fmt.Sscanf(part[i:], "[%d]", &index); err != nil {
				return reflect.Value{}, false
			}
		}
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		f, ok := fieldByTag(v.Type(), name)
		if !ok {
			return reflect.Value{}, false
		}
		v = v.Field(f)
		if index >= 0 {
			if v.Kind() != reflect.Slice || index >= v.Len() {
				return reflect.Value{}, false
			}
			v = v.Index(index)
		}
	}
	return v, true
}

func fieldByTag(t reflect.Type, name string) (int, bool) {
	for i := range t.NumField() {
		if t.Field(i).Tag.Get("yaml") == name {
			return i, true
		}
	}
	return 0, false
}
