package config

import (
	"slices"
	"strings"
)

// Compression configures the compression of responses at the front (gzip
// and brotli, negotiated by Accept-Encoding). It is on by default: the
// nginx sluice replaces is, in every server-rendering deploy, configured
// with gzip on, and a response that is already encoded passes untouched,
// so a worker that compresses itself loses nothing.
type Compression struct {
	// Enabled turns compression on.
	Enabled bool `yaml:"enabled"`
	// MinLength is the size in bytes below which a response is sent as it
	// is. 0 = any size.
	MinLength int64 `yaml:"minLength" form:"size"`
	// Types are the media types compressed: "text/html", "text/*" or
	// "application/*+json". In the file: a list, or a string split on
	// white space.
	Types []string `yaml:"types" form:"fields"`
	// Encodings are the encodings offered, in the order preferred among
	// those a client accepts equally: "br" and "gzip".
	Encodings []string `yaml:"encodings" form:"fields"`
	// GzipLevel is gzip's level, 1 (fastest) to 9 (smallest).
	GzipLevel int `yaml:"gzipLevel"`
	// BrotliLevel is brotli's quality, 1 (fastest) to 11 (smallest).
	BrotliLevel int `yaml:"brotliLevel"`
}

// defaultCompression is the built-in compression section. Its values are
// those of internal/compress's defaults (a test there keeps them equal):
// the reasons and the measurements are in docs/benchmarks.md.
func defaultCompression() Compression {
	return Compression{
		Enabled:   true,
		MinLength: 1024,
		Types: []string{
			"text/html", "text/plain", "text/css", "text/javascript", "text/xml",
			"text/markdown", "text/csv", "text/calendar", "text/vtt",
			"application/javascript", "application/x-javascript", "application/ecmascript",
			"application/json", "application/*+json", "application/xml", "application/*+xml",
			"application/wasm", "image/svg+xml", "image/x-icon", "image/bmp",
			"font/ttf", "font/otf", "application/vnd.ms-fontobject",
		},
		Encodings:   []string{"br", "gzip"},
		GzipLevel:   5,
		BrotliLevel: 2,
	}
}

// maxMinLength bounds compression.minLength: a response shorter than it is
// held in memory until its length is known.
const maxMinLength = 1 << 20

func (v *validator) compression(c *Compression) {
	const at = "compression."
	if c.MinLength > maxMinLength {
		v.errorf(at+"minLength", "%d is more than 1MiB: responses are held in memory up to it", c.MinLength)
	}
	if c.GzipLevel < 1 || c.GzipLevel > 9 {
		v.errorf(at+"gzipLevel", "%d is outside 1..9", c.GzipLevel)
	}
	if c.BrotliLevel < 1 || c.BrotliLevel > 11 {
		v.errorf(at+"brotliLevel", "%d is outside 1..11", c.BrotliLevel)
	}
	if c.Enabled && len(c.Encodings) == 0 {
		v.errorf(at+"encodings", "no encoding: list br, gzip or both, or set compression.enabled: false")
	}
	for i, e := range c.Encodings {
		switch {
		case e != "br" && e != "gzip":
			v.errorf(at+"encodings", "%q is not br or gzip", e)
		case slices.Index(c.Encodings, e) < i:
			v.errorf(at+"encodings", "%q is listed twice", e)
		}
	}
	if c.Enabled && len(c.Types) == 0 {
		v.errorf(at+"types", "no media type: list some, or set compression.enabled: false")
	}
	for _, t := range c.Types {
		if msg := checkMediaType(t); msg != "" {
			v.errorf(at+"types", "%q %s", t, msg)
		}
	}
}

// checkMediaType says what is wrong with a compression.types entry, or "".
// (internal/compress checks the same when sluice starts.)
func checkMediaType(p string) string {
	typ, sub, ok := strings.Cut(p, "/")
	switch {
	case !ok || typ == "" || sub == "":
		return "is not a media type (type/subtype)"
	case typ == "*":
		return "has a wildcard type: images, video and archives are compressed already"
	case strings.ContainsAny(p, " \t;,"):
		return "must be a media type without parameters"
	case strings.Contains(sub, "*") && sub != "*" && (!strings.HasPrefix(sub, "*+") || len(sub) == 2 || strings.Contains(sub[2:], "*")):
		return `has a wildcard that is not "type/*" or "type/*+suffix"`
	}
	return ""
}
