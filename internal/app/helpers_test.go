package app

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
)

func writeConfig(t *testing.T, yaml string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func rewrite(t *testing.T, path, yaml string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
}

// page is what testLibrary serves: an HTML page long enough to compress.
const page = "<!doctype html><p>rendered, and rendered again, and again</p>\n"

// testLibrary is library mode's application in these tests: a page
// behind admit.
func testLibrary(admit func(http.Handler) http.Handler) http.Handler {
	return admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, page)
	}))
}
