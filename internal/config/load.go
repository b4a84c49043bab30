package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"

	"go.yaml.in/yaml/v3"
)

// DefaultFile is the file ResolveWith reads from the working directory when no
// path is given.
const DefaultFile = "sluice.yaml"

// Parse decodes a configuration from data over Default, validates it and
// returns it. name is the file name errors are reported under. On failure
// it returns nil and Errors listing every problem in file order. Warnings
// are dropped: ParseWith returns them.
func Parse(name string, data []byte) (*Config, error) {
	l, err := ParseWith(name, data, Overrides{})
	if err != nil {
		return nil, err
	}
	return l.Config, nil
}

// Overrides are settings from the command line, applied over the file
// before it is validated. A flag wins over the key it sets (see Flags);
// the workers' command is the exception: it may be named in one place
// only.
type Overrides struct {
	// Command, when not empty, is the workers' command, given after -- on
	// the command line (sluice serve -- node worker.js). It fills
	// workers.command, adding a workers section with its defaults when the
	// file has none. A file that names a command too, or has upstreams, is
	// an error: one of the two would be silently ignored.
	Command []string
	// Flags are the keys set by flags, as written on the command line
	// (Listen ":3300", Workers "4", Concurrency "auto"); "" leaves the key
	// to the file.
	Flags Flags
}

// Loaded is a configuration that passed validation.
type Loaded struct {
	Config *Config
	// Source is the file read, or "" for the built-in defaults.
	Source string
	// Warnings are the keys the file sets that have no effect in the
	// configuration they are part of, in file order, each with Warning
	// set. They do not stop sluice.
	Warnings Errors
	// Overridden are the keys Overrides.Flags set, in the order of Flags'
	// fields.
	Overridden []Overridden
}

// ParseWith is Parse with o applied over the file, and its warnings kept.
func ParseWith(name string, data []byte, o Overrides) (*Loaded, error) {
	cfg := Default()
	root, perr := parseYAML(name, data)
	if perr != nil {
		return nil, Errors{perr}
	}
	d := newDecoder(name)
	if root != nil {
		d.value(root, "", reflect.ValueOf(cfg).Elem())
	}
	v := &validator{file: name, lines: d.lines, skip: d.bad}
	return v.check(cfg, name, o, d.errs)
}

// check applies o to cfg, validates it and returns it with its warnings,
// or every error (those already found, errs, first) in file order.
func (v *validator) check(cfg *Config, source string, o Overrides, errs Errors) (*Loaded, error) {
	v.override(cfg, o)
	v.saturationAlias(cfg)
	v.config(cfg)
	errs = append(errs, v.errs...)
	redact(errs, cfg)
	redact(v.warns, cfg)
	if len(errs) == 0 {
		return &Loaded{Config: cfg, Source: source, Warnings: fileOrder(v.warns), Overridden: v.overridden}, nil
	}
	return nil, fileOrder(errs)
}

// override applies o to cfg before validation.
func (v *validator) override(cfg *Config, o Overrides) {
	v.command(cfg, o.Command)
	v.applyFlags(cfg, o.Flags)
}

// command applies the workers' command given after --.
func (v *validator) command(cfg *Config, command []string) {
	if len(command) == 0 {
		return
	}
	switch {
	case cfg.Upstreams != nil:
		v.errorf("upstreams", "the worker command given after -- conflicts with upstreams: sluice either supervises its own workers or forwards to servers it does not start")
		return
	case cfg.Workers == nil:
		cfg.Workers = new(Workers)
		cfg.Workers.setDefaults()
	case v.set("workers.command"):
		v.errorf("workers.command", "is also given after -- on the command line: name the program in one place")
		return
	}
	cfg.Workers.Command = command
}

// fileOrder sorts problems by line, those with no line (defaults in
// conflict) last; nil when there are none.
func fileOrder(errs Errors) Errors {
	if len(errs) == 0 {
		return nil
	}
	slices.SortStableFunc(errs, func(a, b *Error) int {
		la, lb := a.Line, b.Line
		if la == 0 {
			la = 1 << 30
		}
		if lb == 0 {
			lb = 1 << 30
		}
		return la - lb
	})
	return errs
}

// ResolveWith loads the configuration the -c flag asks for, with o applied
// over it: the file at path when path is set; else DefaultFile in the
// working directory when there is one; else Default. Loaded.Source is the
// file read, or "" for the built-in defaults. A path that names no file is
// an error, never a silent fall back to the defaults.
func ResolveWith(path string, o Overrides) (*Loaded, error) {
	if path == "" {
		if _, err := os.Stat(DefaultFile); errors.Is(err, fs.ErrNotExist) {
			v := &validator{}
			return v.check(Default(), "", o, nil)
		}
		path = DefaultFile
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return ParseWith(path, data, o)
}

//go:embed defaults.yaml
var defaultYAML []byte

// DefaultYAML returns the built-in configuration as a commented YAML file:
// every key with its default. Parsing it yields Default.
func DefaultYAML() []byte { return bytes.Clone(defaultYAML) }

// DefaultFrontYAML returns DefaultYAML without the keys that act only in
// library mode (their mode tag, keys.go): the defaults a file for workers
// or upstreams starts from, none of them a key that does nothing there.
// Parsing it yields Default too.
func DefaultFrontYAML() []byte {
	drop := make(map[string]bool)
	for _, k := range modeKeys() {
		if k.Mode == LibraryOnly {
			drop[k.Path] = true
		}
	}
	return dropKeys(defaultYAML, drop)
}

var keyLine = regexp.MustCompile(`^( *)([A-Za-z]+):`)

// dropKeys returns src, a YAML file indented as defaults.yaml is, without
// the keys whose dotted paths drop holds: each such key's line, the lines
// under it and the comment lines that continue its own.
func dropKeys(src []byte, drop map[string]bool) []byte {
	type level struct {
		indent int
		key    string
	}
	var (
		out      bytes.Buffer
		stack    []level
		dropping = -1 // the indent of the key being dropped
	)
	for _, line := range bytes.SplitAfter(src, []byte("\n")) {
		body := bytes.TrimLeft(line, " ")
		indent := len(line) - len(body)
		if dropping >= 0 && indent > dropping && len(bytes.TrimSpace(body)) > 0 {
			continue
		}
		dropping = -1
		if m := keyLine.FindSubmatch(line); m != nil {
			for len(stack) > 0 && stack[len(stack)-1].indent >= indent {
				stack = stack[:len(stack)-1]
			}
			stack = append(stack, level{indent, string(m[2])})
			path := stack[0].key
			for _, l := range stack[1:] {
				path += "." + l.key
			}
			if drop[path] {
				dropping = indent
				continue
			}
		}
		out.Write(line)
	}
	return out.Bytes()
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parseYAML returns the root mapping of the single document in data, or nil
// for an empty document.
func parseYAML(name string, data []byte) (root *yaml.Node, perr *Error) {
	fail := func(err error) *Error {
		msg := err.Error()
		e := &Error{File: name, Msg: "invalid YAML: " + msg}
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			e.Line, _ = strconv.Atoi(m[1])
			e.Msg = "invalid YAML: " + m[2]
		} else if m, ok := bytes.CutPrefix([]byte(msg), []byte("yaml: ")); ok {
			e.Msg = "invalid YAML: " + string(m)
		}
		return e
	}
	// The YAML library is not ours: a panic on hostile input becomes an
	// error rather than taking sluice down.
	defer func() {
		if r := recover(); r != nil {
			root, perr = nil, &Error{File: name, Msg: fmt.Sprintf("invalid YAML: the parser failed: %v", r)}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, fail(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, &Error{File: name, Line: next.Line, Msg: "more than one YAML document: a config is one document"}
	case !errors.Is(err, io.EOF):
		return nil, fail(err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	root = doc.Content[0]
	if isNull(root) {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, &Error{File: name, Line: root.Line, Msg: fmt.Sprintf("want a mapping of sections (server:, workers:, ...), got %s", describe(root))}
	}
	return root, nil
}
