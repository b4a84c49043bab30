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
	minLength := c.MinLength
	if minLength == 0 {
		minLength = -1 // the file's 0 is any size; the package's is its default
	}
	cmp, err := compress.New(compress.Options{
		MinLength:   minLength,
		Types:       c.Types,
		Encodings:   c.Encodings,
		GzipLevel:   c.GzipLevel,
		BrotliLevel: c.BrotliLevel,
	})
	if err != nil {
		return nil, err
	}
	return cmp.Wrap(h), nil
}
