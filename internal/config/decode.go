package config

import (
	"fmt"
	"math"
	"net/netip"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The decoder walks the YAML node tree beside the Config struct, guided by
// the fields' yaml tags, so that every key is checked against the schema and
// every error knows its line. It only converts: ranges and relations between
// keys are checked afterwards by the validator, which works on Go-built
// configs too.
//
// Types are decoded by their Go type: time.Duration (a duration),
// netip.Prefix (a trusted peer), int and int64 (a whole number), float64,
// bool, string, and structs, pointers to structs (an optional section,
// allocated with its defaults), slices and maps of those. Field tags add
// forms: alias:"name" accepts a second key name, form:"size" lets an int64
// be written with a unit ("64KiB": the field is a size in bytes), and
// form:"fields" lets a []string be written as one string split on white
// space. Types with a decodeNode method decode themselves.

// maxNodes bounds the nodes visited, so that aliases cannot expand a small
// file into an exponential amount of work.
const maxNodes = 100_000

var (
	durationType  = reflect.TypeFor[time.Duration]()
	prefixType    = reflect.TypeFor[netip.Prefix]()
	queueSizeType = reflect.TypeFor[QueueSize]()
)

// nodeDecoder is implemented by types with a form of their own. decodeNode
// reports whether it handled n; if not, the generic decoding applies.
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string) bool
}

// defaulter is implemented by optional sections and list elements: a new
// one starts from its defaults.
type defaulter interface {
	setDefaults()
}

type decoder struct {
	file  string
	errs  Errors
	lines map[string]int  // dotted path -> line of its key (or list element)
	bad   map[string]bool // paths whose value did not decode
	nodes int
}

func newDecoder(file string) *decoder {
	return &decoder{file: file, lines: make(map[string]int), bad: make(map[string]bool)}
}

func (d *decoder) errorf(line int, path, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)})
}

// failf reports a value that did not decode: path keeps its previous value,
// which the validator then leaves alone.
func (d *decoder) failf(line int, path, format string, args ...any) {
	d.errorf(line, path, format, args...)
	d.bad[path] = true
}

// deref follows aliases and counts the node against the budget. It returns
// nil when the budget is spent (the error is reported once).
func (d *decoder) deref(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode; i++ {
		if i > 100 {
			return nil
		}
		n = n.Alias
	}
	if n == nil {
		return nil
	}
	d.nodes++
	if d.nodes == maxNodes+1 {
		d.errorf(n.Line, "", "too many YAML nodes (more than %d, aliases included)", maxNodes)
	}
	if d.nodes > maxNodes {
		return nil
	}
	return n
}

// describe names what a node holds, for "want X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if len(v) > 40 {
		v = v[:40] + "..."
	}
	switch n.ShortTag() {
	case "!!str":
		return strconv.Quote(v)
	case "!!null":
		return "null"
	}
	return v
}

func (d *decoder) typeError(n *yaml.Node, path, want string) {
	hint := ""
	switch {
	case want == "a string" && n.Kind == yaml.ScalarNode && n.ShortTag() == "!!int" && strings.HasSuffix(path, "listen"):
		// A bare port: quoted, it would still not be host:port.
		hint = portHint(path, n.Value)
	case want == "a string" && n.Kind == yaml.ScalarNode:
		hint = " (quote it to make it a string)"
	}
	d.failf(n.Line, path, "want %s, got %s%s", want, describe(n), hint)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// value decodes n into v, the value at path.
func (d *decoder) value(n *yaml.Node, path string, v reflect.Value) {
	if n = d.deref(n); n == nil || isNull(n) {
		// null keeps what is there: the default.
		return
	}
	if nd, ok := v.Addr().Interface().(nodeDecoder); ok && nd.decodeNode(d, n, path) {
		return
	}
	t := v.Type()
	switch k := t.Kind(); {
	case t == durationType:
		d.duration(n, path, v)
	case t == prefixType:
		d.peer(n, path, v)
	case k == reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			d.typeError(n, path, "true or false")
			return
		}
		v.SetBool(b)
	case k == reflect.Int, k == reflect.Int64:
		var i int64
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || n.Decode(&i) != nil || v.OverflowInt(i) {
			d.typeError(n, path, "a whole number")
			return
		}
		v.SetInt(i)
	case k == reflect.Float64:
		var f float64
		tag := n.ShortTag()
		if n.Kind != yaml.ScalarNode || (tag != "!!int" && tag != "!!float") || n.Decode(&f) != nil {
			d.typeError(n, path, "a number")
			return
		}
		v.SetFloat(f)
	case k == reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			d.typeError(n, path, "a string")
			return
		}
		v.SetString(n.Value)
	case k == reflect.Pointer:
		if v.IsNil() {
			p := reflect.New(t.Elem())
			if df, ok := p.Interface().(defaulter); ok {
				df.setDefaults()
			}
			v.Set(p)
		}
		d.value(n, path, v.Elem())
	case k == reflect.Struct:
		d.structValue(n, path, v)
	case k == reflect.Slice:
		d.slice(n, path, v)
	case k == reflect.Map:
		d.mapValue(n, path, v)
	default:
		panic(fmt.Sprintf("config: no decoding for %s at %s", t, path))
	}
}

func (d *decoder) duration(n *yaml.Node, path string, v reflect.Value) {
	const want = "a duration (such as \"65s\", or a number of milliseconds)"
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, path, want)
		return
	}
	var (
		dur time.Duration
		err error
	)
	switch n.ShortTag() {
	case "!!int", "!!float":
		var ms float64
		if err = n.Decode(&ms); err == nil {
			dur, err = millis(ms)
		}
	case "!!str":
		dur, err = ParseDuration(n.Value)
	default:
		d.typeError(n, path, want)
		return
	}
	if err != nil {
		d.failf(n.Line, path, "%s", strings.TrimPrefix(err.Error(), "config: "))
		return
	}
	v.SetInt(int64(dur))
}

// peer decodes n, a trusted peer (a CIDR or an IP address), into v.
func (d *decoder) peer(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		d.typeError(n, path, "a CIDR or IP address")
		return
	}
	p, err := parsePeer(n.Value)
	if err != nil {
		d.failf(n.Line, path, "%s", strings.TrimPrefix(err.Error(), "config: "))
		return
	}
	v.Set(reflect.ValueOf(p))
}

// size decodes n, a size in bytes (a field tagged form:"size"), into v.
func (d *decoder) size(n *yaml.Node, path string, v reflect.Value) {
	if n = d.deref(n); n == nil || isNull(n) {
		return // null keeps the default
	}
	const want = "a size (bytes, or such as \"64KiB\")"
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, path, want)
		return
	}
	switch n.ShortTag() {
	case "!!int":
		var i int64
		if n.Decode(&i) != nil {
			d.failf(n.Line, path, "%s is out of range", n.Value)
			return
		}
		v.SetInt(i)
	case "!!float":
		var f float64
		if n.Decode(&f) != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<63 {
			d.failf(n.Line, path, "%s is not a whole number of bytes in range", n.Value)
			return
		}
		v.SetInt(int64(f))
	case "!!str":
		b, err := ParseSize(n.Value)
		if err != nil {
			d.failf(n.Line, path, "%s", strings.TrimPrefix(err.Error(), "config: "))
			return
		}
		v.SetInt(b)
	default:
		d.typeError(n, path, want)
	}
}

// pair is one key and value of a mapping. merged pairs come from a YAML
// merge key (<<) and yield to the mapping's own keys.
type pair struct {
	key, value *yaml.Node
	merged     bool
}

// pairs returns a mapping's pairs, merged ones first so that the mapping's
// own keys, decoded later, override them. It reports keys that are not
// strings and returns nil if n is not a mapping.
func (d *decoder) pairs(n *yaml.Node, path string) []pair {
	return d.appendPairs(nil, n, path, false)
}

// appendPairs appends n's pairs to out: those of its merge keys, then its
// own. One accumulator keeps a deep chain of merges linear.
func (d *decoder) appendPairs(out []pair, n *yaml.Node, path string, merged bool) []pair {
	if n.Kind != yaml.MappingNode {
		return out
	}
	own := make([]pair, 0, len(n.Content)/2)
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := d.deref(n.Content[i])
		if k == nil {
			return out
		}
		val := n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k.Line, path, "a key must be a string, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			out = d.appendMerge(out, val, path)
			continue
		}
		own = append(own, pair{key: k, value: val, merged: merged})
	}
	return append(out, own...)
}

// appendMerge appends the pairs a merge key's value brings: one mapping, or
// a list of mappings where earlier ones win (so they are appended last).
func (d *decoder) appendMerge(out []pair, n *yaml.Node, path string) []pair {
	if n = d.deref(n); n == nil {
		return out
	}
	switch n.Kind {
	case yaml.MappingNode:
		return d.appendPairs(out, n, path, true)
	case yaml.SequenceNode:
		for i := len(n.Content) - 1; i >= 0; i-- {
			m := d.deref(n.Content[i])
			if m == nil {
				return out
			}
			if m.Kind != yaml.MappingNode {
				d.errorf(m.Line, path, "a merge (<<) takes a mapping or a list of mappings, got %s", describe(m))
				continue
			}
			out = d.appendPairs(out, m, path, true)
		}
		return out
	}
	d.errorf(n.Line, path, "a merge (<<) takes a mapping or a list of mappings, got %s", describe(n))
	return out
}

// field is a struct field as the file names it.
type field struct {
	index int
	name  string // the canonical key
}

func structFields(t reflect.Type) (byKey map[string]field, names []string) {
	byKey = make(map[string]field)
	for i := range t.NumField() {
		f := t.Field(i)
		name := f.Tag.Get("yaml")
		if name == "" || name == "-" {
			continue
		}
		byKey[name] = field{index: i, name: name}
		names = append(names, name)
		if alias := f.Tag.Get("alias"); alias != "" {
			byKey[alias] = field{index: i, name: name}
			names = append(names, alias)
		}
	}
	return byKey, names
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (d *decoder) structValue(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping")
		return
	}
	byKey, names := structFields(v.Type())
	seen := make(map[string]*yaml.Node) // canonical name -> the key that set it
	for _, p := range d.pairs(n, path) {
		f, ok := byKey[p.key.Value]
		if _, removed := removedKeys[join(path, p.key.Value)]; !ok && removed {
			// Read, for the warning (effect.go), and dropped.
			d.lines[join(path, p.key.Value)] = p.key.Line
			continue
		}
		if !ok {
			msg := "unknown key"
			if s := suggest(p.key.Value, names); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			d.errorf(p.key.Line, join(path, p.key.Value), "%s", msg)
			continue
		}
		fpath := join(path, f.name)
		if !p.merged {
			if prev := seen[f.name]; prev != nil {
				if prev.Value == p.key.Value {
					d.errorf(p.key.Line, join(path, p.key.Value), "duplicate key (first at line %d)", prev.Line)
				} else {
					d.errorf(p.key.Line, join(path, p.key.Value), "%s and %s (line %d) are the same setting: set one", p.key.Value, prev.Value, prev.Line)
				}
				continue
			}
			seen[f.name] = p.key
		}
		d.lines[fpath] = p.key.Line
		ft := v.Type().Field(f.index)
		fv := v.Field(f.index)
		if ft.Tag.Get("form") == "size" {
			d.size(p.value, fpath, fv)
			continue
		}
		if ft.Tag.Get("form") == "fields" {
			if val := d.deref(p.value); val != nil && val.Kind == yaml.ScalarNode && val.ShortTag() == "!!str" {
				fv.Set(reflect.ValueOf(strings.Fields(val.Value)))
				continue
			}
		}
		d.value(p.value, fpath, fv)
	}
}

func (d *decoder) slice(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.SequenceNode {
		d.typeError(n, path, "a list")
		return
	}
	t := v.Type()
	if len(n.Content) == 0 {
		v.Set(reflect.Zero(t))
		return
	}
	out := reflect.MakeSlice(t, 0, len(n.Content))
	for i, item := range n.Content {
		epath := fmt.Sprintf("%s[%d]", path, i)
		e := reflect.New(t.Elem())
		if df, ok := e.Interface().(defaulter); ok {
			df.setDefaults()
		}
		if it := d.deref(item); it != nil {
			d.lines[epath] = it.Line
		}
		d.value(item, epath, e.Elem())
		out = reflect.Append(out, e.Elem())
	}
	v.Set(out)
}

// mapValue decodes a map with string keys. A string-valued map (such as
// workers.env) takes any scalar as its text, since environment variables
// are often numbers; null is the empty value.
func (d *decoder) mapValue(n *yaml.Node, path string, v reflect.Value) {
	if n.Kind != yaml.MappingNode {
		d.typeError(n, path, "a mapping")
		return
	}
	t := v.Type()
	out := reflect.MakeMap(t)
	seen := make(map[string]int)
	for _, p := range d.pairs(n, path) {
		key := p.key.Value
		kpath := join(path, key)
		if !p.merged {
			if line, dup := seen[key]; dup {
				d.errorf(p.key.Line, kpath, "duplicate key (first at line %d)", line)
				continue
			}
			seen[key] = p.key.Line
		}
		d.lines[kpath] = p.key.Line
		e := reflect.New(t.Elem()).Elem()
		val := d.deref(p.value)
		if val == nil {
			return
		}
		if t.Elem().Kind() == reflect.String && val.Kind == yaml.ScalarNode {
			if !isNull(val) {
				e.SetString(val.Value)
			}
		} else {
			d.value(val, kpath, e)
		}
		out.SetMapIndex(reflect.ValueOf(key).Convert(t.Key()), e)
	}
	if out.Len() == 0 {
		out = reflect.Zero(t)
	}
	v.Set(out)
}

// positiveOrAuto is what Count and Concurrency accept.
const positiveOrAuto = "a positive whole number or \"auto\""

// decodeNode accepts a positive whole number or "auto"; anything else is an
// error, never a silent single process.
func (c *Count) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if i, ok := d.wholeOrAuto(n, path, 1, int(CountAuto), positiveOrAuto); ok {
		*c = Count(i)
	}
	return true
}

// decodeNode accepts a positive whole number or "auto", as Count does.
func (c *Concurrency) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if i, ok := d.wholeOrAuto(n, path, 1, int(ConcurrencyAuto), positiveOrAuto); ok {
		*c = Concurrency(i)
	}
	return true
}

// decodeNode accepts a whole number (0: no queue) or "auto".
func (q *QueueSize) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if i, ok := d.wholeOrAuto(n, path, 0, int(QueueSizeAuto), "a whole number (0: no queue) or \"auto\""); ok {
		*q = QueueSize(i)
	}
	return true
}

// wholeOrAuto decodes "auto" as auto, or a whole number in [least, 2^20],
// reporting anything else as not what want says.
func (d *decoder) wholeOrAuto(n *yaml.Node, path string, least, auto int, want string) (int, bool) {
	if n.Kind != yaml.ScalarNode {
		d.typeError(n, path, want)
		return 0, false
	}
	if n.ShortTag() == "!!str" && n.Value == "auto" {
		return auto, true
	}
	i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 10, 64)
	if tag := n.ShortTag(); (tag != "!!int" && tag != "!!str") || err != nil || i < int64(least) || i > 1<<20 {
		d.failf(n.Line, path, "%s is not %s", describe(n), want)
		return 0, false
	}
	return int(i), true
}

// decodeNode accepts an upstream written as just its address.
func (u *Upstream) decodeNode(d *decoder, n *yaml.Node, path string) bool {
	if n.Kind != yaml.ScalarNode {
		return false
	}
	if n.ShortTag() != "!!str" {
		d.typeError(n, path, "an address or a mapping")
		return true
	}
	u.Address = n.Value
	d.lines[join(path, "address")] = n.Line
	return true
}
