// The test in this folder keeps architecture.md true to the tree: every
// package it names exists, and every package has a row.
package docs_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// rowName is the first cell of a row of the package table: a package path
// in backquotes, with a trailing slash for a nested module.
var rowName = regexp.MustCompile("^\\| `([a-z0-9/_.-]+)`")

// tableRows returns the paths named in the first column of
// architecture.md's package table.
func tableRows(t *testing.T) []string {
	t.Helper()
	f, err := os.Open("architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := rowName.FindStringSubmatch(sc.Text()); m != nil {
			rows = append(rows, m[1])
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(rows) < 10 {
		t.Fatalf("found %d rows in architecture.md's package table; has its format changed?", len(rows))
	}
	return rows
}

// goPackages returns the directories under root holding non-test Go files,
// relative to root, leaving out what is not the project's own code.
func goPackages(t *testing.T, root string) []string {
	t.Helper()
	seen := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", ".scratch", "node_modules", "testdata":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") && !strings.HasSuffix(p, "_test.go") {
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			seen[filepath.ToSlash(rel)] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var pkgs []string
	for p := range seen {
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// covers reports whether the row names pkg: the same path, or, for a row of
// a nested module ("grpc/"), any package inside it, or, for any row, a
// command of its own ("internal/eval" covers "internal/eval/cmd/eval").
func covers(row, pkg string) bool {
	r := strings.TrimSuffix(row, "/")
	switch {
	case r == pkg:
		return true
	case strings.HasSuffix(row, "/"):
		return strings.HasPrefix(pkg, r+"/")
	default:
		return strings.HasPrefix(pkg, r+"/cmd/")
	}
}

func TestArchitectureNamesExistingPackages(t *testing.T) {
	for _, row := range tableRows(t) {
		if fi, err := os.Stat(filepath.Join("..", row)); err != nil || !fi.IsDir() {
			t.Errorf("architecture.md has a row for %s, which is not a directory of the repository", row)
		}
	}
}

func TestEveryPackageHasARow(t *testing.T) {
	rows := tableRows(t)
	for _, pkg := range goPackages(t, "..") {
		if pkg == "." || pkg == "docs" {
			continue
		}
		found := false
		for _, row := range rows {
			if covers(row, pkg) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("package %s has no row in architecture.md's package table", pkg)
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tt := range []struct {
		row, pkg string
		want     bool
	}{
		{"limit", "limit", true},
		{"limit", "limiter", false},
		{"admission", "admission/promadmission", false},
		{"grpc/", "grpc", true},
		{"grpc/", "grpc/internal/x", true},
		{"internal/eval", "internal/eval/cmd/eval", true},
		{"internal/eval", "internal/evalmark", false},
	} {
		if got := covers(tt.row, tt.pkg); got != tt.want {
			t.Errorf("covers(%q, %q) = %v, want %v", tt.row, tt.pkg, got, tt.want)
		}
	}
}
