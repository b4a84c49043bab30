package compress_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/sluicehq/sluice/internal/compress"
)

// A Compressor wraps a handler; the client's Accept-Encoding chooses the
// encoding.
func Example() {
	c, err := compress.New(compress.Options{}) // brotli or gzip, 1 KiB and more, text types
	if err != nil {
		panic(err)
	}
	h := c.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, strings.Repeat("<li>a listing</li>", 500))
	}))

	for _, ae := range []string{"gzip, deflate, br", "gzip", ""} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept-Encoding", ae)
		h.ServeHTTP(rec, r)
		fmt.Printf("%-18q -> %-4s %5d bytes, Vary: %s\n", ae, rec.Header().Get("Content-Encoding"), rec.Body.Len(), rec.Header().Get("Vary"))
	}
	// Output:
	// "gzip, deflate, br" -> br      51 bytes, Vary: Accept-Encoding
	// "gzip"             -> gzip    80 bytes, Vary: Accept-Encoding
	// ""                 ->       9000 bytes, Vary: Accept-Encoding
}
