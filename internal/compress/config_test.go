package compress_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/compress"
	"github.com/sluicehq/sluice/internal/config"
)

// TestConfigDefaults keeps sluice.yaml's compression defaults (the config
// package imports nothing of sluice's, so it spells them out) equal to
// this package's.
func TestConfigDefaults(t *testing.T) {
	c := config.Default().Compression
	if !c.Enabled {
		t.Error("compression.enabled: got false, want true")
	}
	if c.MinLength != compress.DefaultMinLength {
		t.Errorf("minLength: got %d, want %d", c.MinLength, compress.DefaultMinLength)
	}
	if !slices.Equal(c.Types, compress.DefaultTypes) {
		t.Errorf("types: got %q, want %q", c.Types, compress.DefaultTypes)
	}
	if !slices.Equal(c.Encodings, compress.DefaultEncodings) {
		t.Errorf("encodings: got %q, want %q", c.Encodings, compress.DefaultEncodings)
	}
	if c.GzipLevel != compress.DefaultGzipLevel || c.BrotliLevel != compress.DefaultBrotliLevel {
		t.Errorf("levels: got gzip %d brotli %d, want %d and %d", c.GzipLevel, c.BrotliLevel,
			compress.DefaultGzipLevel, compress.DefaultBrotliLevel)
	}
	for _, ty := range c.Types {
		if err := compress.CheckType(ty); err != nil {
			t.Error(err)
		}
	}
}
