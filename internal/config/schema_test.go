package config

import (
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// schemaPaths lists every key of the schema as a dotted path, list elements
// written [] ("routes[].match.method").
func schemaPaths() []string {
	var out []string
	for _, k := range Keys() {
		out = append(out, k.Path)
	}
	return out
}

var index = regexp.MustCompile(`\[\d+\]`)

// pathsIn returns the schema paths a YAML text sets.
func pathsIn(t *testing.T, name string, src []byte) map[string]bool {
	t.Helper()
	root, perr := parseYAML(name, src)
	if perr != nil {
		t.Fatalf("%s: %v", name, perr)
	}
	d := newDecoder(name)
	d.value(root, "", reflect.ValueOf(Default()).Elem())
	if len(d.errs) > 0 {
		t.Fatalf("%s: %v", name, d.errs)
	}
	seen := make(map[string]bool)
	for p := range d.lines {
		seen[index.ReplaceAllString(p, "[]")] = true
	}
	return seen
}

// commentedBlocks returns the commented-out YAML sections of src: a line
// "# name:" starts one, and it runs while lines start with "#   " (the
// YAML indented under the "# "). They are returned uncommented.
func commentedBlocks(src string) []string {
	var blocks []string
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		if !regexp.MustCompile(`^# [a-zA-Z]+:$`).MatchString(lines[i]) {
			continue
		}
		block := []string{lines[i][2:]}
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "#   ") {
			i++
			block = append(block, lines[i][2:])
		}
		blocks = append(blocks, strings.Join(block, "\n")+"\n")
	}
	return blocks
}

// checkCovers fails for every schema path the YAML text does not show,
// counting its commented-out sections.
func checkCovers(t *testing.T, name, src string) {
	t.Helper()
	seen := pathsIn(t, name, []byte(src))
	for _, b := range commentedBlocks(src) {
		for p := range pathsIn(t, name+" (commented)", []byte(b)) {
			seen[p] = true
		}
	}
	for _, p := range schemaPaths() {
		if !seen[p] {
			t.Errorf("%s does not show %s", name, p)
		}
	}
}

func TestDefaultYAMLShowsEveryKey(t *testing.T) {
	checkCovers(t, "defaults.yaml", string(defaultYAML))
}

func TestExampleShowsEveryKey(t *testing.T) {
	src, err := os.ReadFile("../../examples/sluice.yaml")
	if err != nil {
		t.Fatal(err)
	}
	checkCovers(t, "examples/sluice.yaml", string(src))
}

func TestDocsDescribeEveryKey(t *testing.T) {
	src, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(src)
	for _, p := range schemaPaths() {
		if !strings.Contains(doc, "`"+p+"`") {
			t.Errorf("docs/configuration.md does not describe `%s`", p)
		}
	}
}

func TestCommentedBlocks(t *testing.T) {
	src := "a: 1\n# workers: absent by default\n# workers:\n#   count: 2\n#   env:\n#     A: b\n# prose\n#   not in a block\n"
	got := commentedBlocks(src)
	want := []string{"workers:\n  count: 2\n  env:\n    A: b\n"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// What initialLimit: 0 means depends on the algorithm; --print-defaults
// and docs/configuration.md must both say so, alike.
func TestInitialLimitZeroDocumented(t *testing.T) {
	docs, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var row string
	for _, line := range strings.Split(string(docs), "\n") {
		if strings.HasPrefix(line, "| `server.backpressure.initialLimit` |") {
			row = line
		}
	}
	_, comment, _ := strings.Cut(string(defaultYAML), "initialLimit: 0")
	comment, _, _ = strings.Cut(comment, "minLimit:")
	for _, start := range []string{"usable CPUs", "100", "maxLimit"} {
		for name, text := range map[string]string{"docs/configuration.md": row, "--print-defaults": comment} {
			if !strings.Contains(text, start) {
				t.Errorf("%s: initialLimit 0 does not name %q as a start: %q", name, start, text)
			}
		}
	}
	for _, algo := range []string{"auto", "gradient", "aimd", "fixed"} {
		if !strings.Contains(comment, algo) {
			t.Errorf("--print-defaults: initialLimit 0 does not say what it is with %s: %q", algo, comment)
		}
	}
}
