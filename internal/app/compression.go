package app

import (
	"net/http"

	"github.com/sluicehq/sluice/internal/compress"
	"github.com/sluicehq/sluice/internal/config"
)

// compression wraps h in the response compression the config asks for.
// It goes around the proxy, not inside it: the proxy frees a worker's slot
// when the worker has finished (responses up to proxy.bufferResponseBytes
// are read whole first), and only then writes the response through the
// compressor, so the compression work is never done inside a render slot.
func compression(c config.Compression, h http.Handler) (http.Handler, error) {
	if !c.Enabled {
		return h, nil
	}
	cmp, err := compress.New(compressOptions(c))
	if err != nil {
		return nil, err
	}
	return cmp.Wrap(h), nil
}

// compressOptions maps the compression section onto the compressor's
// options.
func compressOptions(c config.Compression) compress.Options {
	return compress.Options{
		MinLength:   none(c.MinLength), // the file's 0 is any size
		Types:       c.Types,
		Encodings:   c.Encodings,
		GzipLevel:   c.GzipLevel,
		BrotliLevel: c.BrotliLevel,
	}
}
