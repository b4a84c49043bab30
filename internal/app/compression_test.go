package app

import (
	"net/http"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// compression maps the file's settings: off, and minLength 0 meaning any
// size (the package's 0 is its default).
func TestCompressionWiring(t *testing.T) {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("short"))
	})
	for _, tt := range []struct {
		name    string
		enabled bool
		min     int64
		want    string
	}{
		{"off", false, 0, ""},
		{"minLength 0 is any size", true, 0, "gzip"},
		{"minLength 1KiB", true, 1024, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := config.Default().Compression
			c.Enabled, c.MinLength = tt.enabled, tt.min
			wrapped, err := compression(c, h)
			if err != nil {
				t.Fatal(err)
			}
			req, _ := http.NewRequest("GET", "/", nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := &headerRecorder{hdr: http.Header{}}
			wrapped.ServeHTTP(rec, req)
			if got := rec.hdr.Get("Content-Encoding"); got != tt.want {
				t.Errorf("Content-Encoding: got %q, want %q", got, tt.want)
			}
		})
	}
}

type headerRecorder struct{ hdr http.Header }

func (r *headerRecorder) Header() http.Header         { return r.hdr }
func (r *headerRecorder) WriteHeader(int)             {}
func (r *headerRecorder) Write(p []byte) (int, error) { return len(p), nil }
