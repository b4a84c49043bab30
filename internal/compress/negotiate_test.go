package compress

import "testing"

func TestNegotiate(t *testing.T) {
	both := []coding{codingBrotli, codingGzip}
	gzipFirst := []coding{codingGzip, codingBrotli}
	gzipOnly := []coding{codingGzip}
	tests := []struct {
		ae      string
		offered []coding
		want    coding
	}{
		{"", both, identity}, // no header: nginx's and browsers' reading
		{"gzip", both, codingGzip},
		{"br", both, codingBrotli},
		{"gzip, deflate, br", both, codingBrotli}, // equal q: the server's order
		{"gzip, deflate, br, zstd", gzipFirst, codingGzip},
		{"gzip, deflate", both, codingGzip}, // a browser over plain HTTP
		{"deflate", both, identity},
		{"zstd", both, identity},
		{"br;q=0.5, gzip", both, codingGzip}, // higher q wins over preference
		{"br;q=1.0, gzip;q=0.9", gzipFirst, codingBrotli},
		{"gzip;q=0", both, identity},
		{"gzip;q=0, br;q=0", both, identity},
		{"br;q=0, gzip", both, codingGzip},
		{"*", both, codingBrotli},
		{"*;q=0", both, identity},
		{"*;q=0.5, br;q=0", both, codingGzip}, // listed beats the wildcard
		{"*, gzip;q=0", gzipOnly, identity},
		{"identity", both, identity},
		{"identity;q=1, gzip;q=0.5", both, identity}, // identity preferred explicitly
		{"identity;q=0.2, gzip;q=0.5", both, codingGzip},
		{"identity;q=0", both, identity}, // nothing else accepted: uncompressed anyway
		{"GZIP", both, codingGzip},       // case-insensitive
		{"Br;Q=0.8, gzip;q=0.7", both, codingBrotli},
		{"x-gzip", both, codingGzip},
		{"  gzip  ;  q=0.5 ,br ; q=0.4", both, codingGzip},
		{"gzip;q=abc, br", both, codingBrotli}, // malformed element ignored
		{"gzip;q=2", both, identity},           // q out of range: ignored
		{"gzip;q=NaN", both, identity},
		{"gzip;level=1;q=0.3, br;q=0.2", both, codingGzip}, // other parameters skipped
		{",,,", both, identity},
		{"br", gzipOnly, identity}, // not offered
	}
	for _, tt := range tests {
		if got := negotiate(tt.ae, tt.offered); got != tt.want {
			t.Errorf("negotiate(%q, %v): got %v, want %v", tt.ae, tt.offered, got, tt.want)
		}
	}
}

func TestNegotiateDoesNotAllocate(t *testing.T) {
	both := []coding{codingBrotli, codingGzip}
	allocs := testing.AllocsPerRun(100, func() {
		negotiate("gzip, deflate, br;q=0.9, *;q=0.1, identity;q=0.05", both)
	})
	if allocs != 0 {
		t.Errorf("got %v allocations, want 0", allocs)
	}
}

func TestMatchType(t *testing.T) {
	types := compileTypes([]string{"text/*", "application/json", "application/*+xml", "image/svg+xml"})
	tests := []struct {
		ct   string
		want bool
	}{
		{"text/html; charset=utf-8", true},
		{"TEXT/HTML", true},
		{"text/plain", true},
		{" application/json ; charset=utf-8", true},
		{"application/JSON", true},
		{"application/atom+xml", true},
		{"application/+xml", false},
		{"application/xml", false}, // "*+xml" needs something before the suffix
		{"image/svg+xml", true},
		{"image/png", false},
		{"application/octet-stream", false},
		{"", false},
		{"text", false},
		{"text/", false},
	}
	for _, tt := range tests {
		if got := matchType(types, tt.ct); got != tt.want {
			t.Errorf("matchType(%q): got %v, want %v", tt.ct, got, tt.want)
		}
	}
}

func TestDefaultTypes(t *testing.T) {
	types := compileTypes(DefaultTypes)
	for _, ct := range []string{"text/html; charset=utf-8", "application/json", "application/ld+json",
		"application/javascript", "text/css", "image/svg+xml", "application/rss+xml"} {
		if !matchType(types, ct) {
			t.Errorf("%q: not compressed by default, want compressed", ct)
		}
	}
	for _, ct := range []string{"text/event-stream", "image/png", "image/jpeg", "video/mp4",
		"application/zip", "application/gzip", "font/woff2", "application/octet-stream"} {
		if matchType(types, ct) {
			t.Errorf("%q: compressed by default, want not", ct)
		}
	}
}
