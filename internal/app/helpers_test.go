package app

import (
	"io"
	"net/http"

	"github.com/sluicehq/sluice/internal/testutil"
)

// writeConfig and rewrite are testutil's, by their short names here.
var (
	writeConfig = testutil.WriteConfig
	rewrite     = testutil.Rewrite
)

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
