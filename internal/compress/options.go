package compress

import (
	"errors"
	"fmt"
	"strings"
)

// The defaults, chosen by measurement on an 80 KB server-rendered page
// (docs/benchmarks.md, "Compression").
const (
	// DefaultMinLength is the length below which a response is sent as it
	// is. nginx's gzip_min_length defaults to 20 bytes; at that size the
	// gzip header and trailer alone (18 bytes) eat the saving. 1 KiB is
	// about where compressing saves a packet.
	DefaultMinLength = 1024
	// DefaultGzipLevel is gzip's level, 1 (fastest) to 9 (smallest): 6
	// costs about a fifth more CPU for 2% fewer bytes.
	DefaultGzipLevel = 5
	// DefaultBrotliLevel is brotli's quality, 1 to 11. At 2 brotli costs
	// about what the nginx gzip_comp_level 6 it replaces did and sends 12%
	// fewer bytes; 4 costs 40-50% more for 5% fewer, and 10 and 11 are for
	// static assets compressed once, not pages rendered per request.
	DefaultBrotliLevel = 2
)

// Encoding names, as in Content-Encoding.
const (
	Brotli = "br"
	Gzip   = "gzip"
)

// DefaultEncodings is the server's order of preference among the encodings
// a client accepts equally: brotli first, smaller at the same CPU.
var DefaultEncodings = []string{Brotli, Gzip}

// DefaultTypes are the media types compressed when Options.Types is nil:
// text that compresses well. text/event-stream is left out on purpose: an
// event stream lives for minutes and would hold a compressor's memory
// (hundreds of KiB) for each open connection; list it to compress it.
var DefaultTypes = []string{
	"text/html", "text/plain", "text/css", "text/javascript", "text/xml",
	"text/markdown", "text/csv", "text/calendar", "text/vtt",
	"application/javascript", "application/x-javascript", "application/ecmascript",
	"application/json", "application/*+json", "application/xml", "application/*+xml",
	"application/wasm", "image/svg+xml", "image/x-icon", "image/bmp",
	"font/ttf", "font/otf", "application/vnd.ms-fontobject",
}

// Options configures a Compressor. The zero value compresses DefaultTypes
// of DefaultMinLength bytes or more, with brotli or gzip at the default
// levels.
type Options struct {
	// MinLength is the length in bytes below which a response is sent
	// uncompressed. A response whose length is unknown (no Content-Length)
	// is held up to MinLength bytes until it is known which side of it it
	// falls, or until the handler flushes. 0 means DefaultMinLength;
	// negative means any length.
	MinLength int64
	// Types are the media types compressed, matched without regard to
	// case and parameters: "text/html", a subtype wildcard "text/*", or a
	// structured-syntax suffix "application/*+json". A response without
	// Content-Type is not compressed. nil means DefaultTypes.
	Types []string
	// Encodings are the encodings offered, in the server's order of
	// preference among those a client accepts with the same q-value:
	// "br" and "gzip". nil means DefaultEncodings.
	Encodings []string
	// GzipLevel is gzip's level, 1 to 9. 0 means DefaultGzipLevel.
	GzipLevel int
	// BrotliLevel is brotli's quality, 1 to 11. 0 means DefaultBrotliLevel.
	BrotliLevel int
}

// Validate reports every field that is wrong, joined; nil when all are
// usable.
func (o Options) Validate() error {
	var errs []error
	if o.GzipLevel < 0 || o.GzipLevel > 9 {
		errs = append(errs, fmt.Errorf("compress: GzipLevel %d is outside 1..9", o.GzipLevel))
	}
	if o.BrotliLevel < 0 || o.BrotliLevel > 11 {
		errs = append(errs, fmt.Errorf("compress: BrotliLevel %d is outside 1..11", o.BrotliLevel))
	}
	if o.Encodings != nil && len(o.Encodings) == 0 {
		errs = append(errs, errors.New("compress: Encodings is empty: nil means the default, and no encoding means no Compressor"))
	}
	seen := map[string]bool{}
	for _, e := range o.Encodings {
		switch {
		case e != Brotli && e != Gzip:
			errs = append(errs, fmt.Errorf("compress: Encodings: %q is not one of %q, %q", e, Brotli, Gzip))
		case seen[e]:
			errs = append(errs, fmt.Errorf("compress: Encodings: %q is listed twice", e))
		}
		seen[e] = true
	}
	for _, t := range o.Types {
		if err := CheckType(t); err != nil {
			errs = append(errs, fmt.Errorf("compress: Types: %w", err))
		}
	}
	return errors.Join(errs...)
}

// CheckType reports whether pattern is a media type pattern Types accepts:
// "type/subtype", "type/*", or "type/*+suffix".
func CheckType(pattern string) error {
	typ, sub, ok := strings.Cut(pattern, "/")
	switch {
	case !ok || typ == "" || sub == "":
		return fmt.Errorf("%q is not type/subtype", pattern)
	case typ == "*":
		return fmt.Errorf("%q: the type cannot be a wildcard (compressing images and video again wastes CPU)", pattern)
	case strings.ContainsAny(pattern, " \t;,"):
		return fmt.Errorf("%q: a media type without parameters or spaces", pattern)
	case strings.Contains(sub, "*") && sub != "*" && !(strings.HasPrefix(sub, "*+") && len(sub) > 2 && !strings.Contains(sub[2:], "*")):
		return fmt.Errorf("%q: a wildcard subtype is \"*\" or \"*+suffix\"", pattern)
	}
	return nil
}

// withDefaults returns o with its zero fields set to the defaults.
func (o Options) withDefaults() Options {
	if o.MinLength == 0 {
		o.MinLength = DefaultMinLength
	}
	if o.MinLength < 0 {
		o.MinLength = 0
	}
	if o.Types == nil {
		o.Types = DefaultTypes
	}
	if o.Encodings == nil {
		o.Encodings = DefaultEncodings
	}
	if o.GzipLevel == 0 {
		o.GzipLevel = DefaultGzipLevel
	}
	if o.BrotliLevel == 0 {
		o.BrotliLevel = DefaultBrotliLevel
	}
	return o
}
