package deploy

import (
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// configKeys returns every key of sluice.yaml as a dotted path
// ("server.backpressure.queueSize", "routes[].match.method"), aliases
// included, read from internal/config's structs.
func configKeys() map[string]bool {
	keys := map[string]bool{}
	pkg := reflect.TypeFor[config.Config]().PkgPath()
	var walk func(prefix string, t reflect.Type)
	walk = func(prefix string, t reflect.Type) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct && t.Elem().PkgPath() == pkg {
			prefix += "[]"
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || t.PkgPath() != pkg {
			return
		}
		for f := range t.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
			if name == "" || name == "-" {
				continue
			}
			names := []string{name}
			if alias := f.Tag.Get("alias"); alias != "" {
				names = append(names, alias)
			}
			for _, n := range names {
				key := n
				if prefix != "" {
					key = prefix + "." + n
				}
				keys[key] = true
				walk(key, f.Type)
			}
		}
	}
	walk("", reflect.TypeFor[config.Config]())
	return keys
}

// TestOperationsDocKeys: every sluice.yaml key that docs/operations.md
// names (in its migration tables and elsewhere) exists, and its example
// sluice.yaml validates.
func TestOperationsDocKeys(t *testing.T) {
	data, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	keys := configKeys()
	if !keys["server.backpressure.queueSize"] || !keys["routes[].match.method"] || !keys["server.backpressure.eluMax"] {
		t.Fatalf("configKeys misses keys it should find: %d keys", len(keys))
	}
	sections := map[string]bool{}
	for k := range keys {
		top, _, _ := strings.Cut(k, ".")
		sections[strings.TrimSuffix(top, "[]")] = true
	}
	named := 0
	for _, m := range regexp.MustCompile("`([a-zA-Z]+(?:\\[\\])?(?:\\.[a-zA-Z]+(?:\\[\\])?)+)`").FindAllStringSubmatch(doc, -1) {
		top, _, _ := strings.Cut(m[1], ".")
		if !sections[strings.TrimSuffix(top, "[]")] {
			continue // not a sluice.yaml key (a file name, say)
		}
		named++
		if !keys[m[1]] {
			t.Errorf("docs/operations.md names `%s`, which sluice.yaml has not", m[1])
		}
	}
	if named < 50 {
		t.Errorf("docs/operations.md: %d sluice.yaml keys found, want the migration tables' (50 or more)", named)
	}
	blocks := regexp.MustCompile("(?s)```yaml\n(.*?)```").FindAllStringSubmatch(doc, -1)
	if len(blocks) == 0 {
		t.Fatal("docs/operations.md: no yaml example")
	}
	for _, b := range blocks {
		l, err := config.ParseWith("operations.md example", []byte(b[1]), config.Overrides{})
		if err != nil {
			t.Errorf("docs/operations.md's example does not validate:\n%v", err)
			continue
		}
		for _, w := range l.Warnings {
			t.Errorf("docs/operations.md's example: %v", w)
		}
	}
}

// TestOperationsDocMetrics: every metric docs/operations.md names is
// exported by a running sluice.
func TestOperationsDocMetrics(t *testing.T) {
	data, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	exp := exportedMetrics(t)
	var ar adapterRules
	readYAML(t, "prometheus/adapter-rules.yaml", &ar)
	derived := map[string]bool{} // the HPA's metrics, the adapter's own
	for _, r := range ar.Rules {
		derived[r.Name.As] = true
	}
	named := 0
	for _, m := range regexp.MustCompile("`((?:sluice|process|go)_[a-z_]+)`").FindAllStringSubmatch(string(data), -1) {
		named++
		if _, ok := exp[m[1]]; !ok && !derived[m[1]] {
			t.Errorf("docs/operations.md names %s, which sluice's /metrics does not export", m[1])
		}
	}
	if named == 0 {
		t.Error("docs/operations.md names no metric")
	}
}
