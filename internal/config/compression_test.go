package config_test

import (
	"slices"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

func TestCompressionErrors(t *testing.T) {
	for _, tc := range []struct {
		name, src, path, msg string
		line                 int
	}{
		{"gzip level", "compression:\n  gzipLevel: 10\n", "compression.gzipLevel", "outside 1..9", 2},
		{"gzip level 0", "compression:\n  gzipLevel: 0\n", "compression.gzipLevel", "outside 1..9", 2},
		{"brotli level", "compression:\n  brotliLevel: 12\n", "compression.brotliLevel", "outside 1..11", 2},
		{"unknown encoding", "compression:\n  encodings: [br, zstd]\n", "compression.encodings", `"zstd" is not br or gzip`, 2},
		{"encoding twice", "compression:\n  encodings: [gzip, gzip]\n", "compression.encodings", "listed twice", 2},
		{"no encoding", "compression:\n  encodings: []\n", "compression.encodings", "no encoding", 2},
		{"no type", "compression:\n  types: []\n", "compression.types", "no media type", 2},
		{"not a media type", "compression:\n  types: [html]\n", "compression.types", "not a media type", 2},
		{"wildcard type", "compression:\n  types: [\"*/*\"]\n", "compression.types", "wildcard type", 2},
		{"parameters", "compression:\n  types: [\"text/html; charset=utf-8\"]\n", "compression.types", "without parameters", 2},
		{"bad wildcard", "compression:\n  types: [\"application/x-*\"]\n", "compression.types", "wildcard", 2},
		{"minLength too large", "compression:\n  minLength: 2MiB\n", "compression.minLength", "more than 1MiB", 2},
		{"minLength negative", "compression:\n  minLength: -1\n", "compression.minLength", "negative", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := config.Parse("sluice.yaml", []byte(tc.src))
			checkOne(t, err, tc.line, tc.path, tc.msg)
		})
	}
}

func TestCompressionParse(t *testing.T) {
	src := "compression:\n  minLength: 2KiB\n  types: text/html application/*+json\n  encodings: gzip\n  gzipLevel: 6\n  brotliLevel: 4\n"
	c, err := config.Parse("sluice.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	got := c.Compression
	if !got.Enabled || got.MinLength != 2048 || got.GzipLevel != 6 || got.BrotliLevel != 4 ||
		!slices.Equal(got.Types, []string{"text/html", "application/*+json"}) || !slices.Equal(got.Encodings, []string{"gzip"}) {
		t.Errorf("got %+v", got)
	}

	// Off: an empty list is then no error.
	c, err = config.Parse("sluice.yaml", []byte("compression:\n  enabled: false\n  types: []\n  encodings: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Compression.Enabled {
		t.Error("enabled: got true, want false")
	}
}
