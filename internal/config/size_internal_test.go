package config

import (
	"reflect"
	"strings"
	"testing"
)

// Only a field that says it is a size (form:"size") takes a unit: an int64
// that counts something else is a whole number, and "1MiB" there is an
// error, not a million of it.
func TestSizeOnlyWhereTagged(t *testing.T) {
	type schema struct {
		Bytes int64 `yaml:"bytes" form:"size"`
		Count int64 `yaml:"count"`
	}
	for _, tc := range []struct {
		src     string
		want    schema
		wantErr string // a substring of the one error; empty for none
	}{
		{"bytes: 1MiB\ncount: 3\n", schema{Bytes: 1 << 20, Count: 3}, ""},
		{"bytes: 1e3\n", schema{Bytes: 1000, Count: 7}, ""},
		{"bytes: ~\n", schema{Bytes: 7, Count: 7}, ""}, // null keeps the default
		{"count: 1MiB\n", schema{Bytes: 7, Count: 7}, `count: want a whole number, got "1MiB"`},
		{"count: 1e3\n", schema{Bytes: 7, Count: 7}, "count: want a whole number, got 1e3"},
		{"bytes: [1]\n", schema{Bytes: 7, Count: 7}, "bytes: want a size"},
	} {
		t.Run(tc.src, func(t *testing.T) {
			root, perr := parseYAML("t.yaml", []byte(tc.src))
			if perr != nil {
				t.Fatal(perr)
			}
			got := schema{Bytes: 7, Count: 7}
			d := newDecoder("t.yaml")
			d.value(root, "", reflect.ValueOf(&got).Elem())
			switch {
			case tc.wantErr == "" && len(d.errs) > 0:
				t.Fatalf("got %v, want no error", d.errs)
			case tc.wantErr != "" && (len(d.errs) != 1 || !strings.Contains(d.errs.Error(), tc.wantErr)):
				t.Fatalf("got errors %v, want one containing %q", d.errs, tc.wantErr)
			case tc.wantErr == "" && got != tc.want:
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Every size key of sluice.yaml takes a unit.
func TestSizeKeys(t *testing.T) {
	src := `
server: {maxHeaderBytes: 2KiB}
proxy: {maxBodyBytes: 2KiB, maxBufferedBytes: 2MiB, bufferResponseBytes: 2KiB}
compression: {enabled: true, minLength: 2KiB}
`
	cfg, err := Parse("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		key       string
		got, want int64
	}{
		{"server.maxHeaderBytes", cfg.Server.MaxHeaderBytes, 2 << 10},
		{"proxy.maxBodyBytes", cfg.Proxy.MaxBodyBytes, 2 << 10},
		{"proxy.maxBufferedBytes", cfg.Proxy.MaxBufferedBytes, 2 << 20},
		{"proxy.bufferResponseBytes", cfg.Proxy.BufferResponseBytes, 2 << 10},
		{"compression.minLength", cfg.Compression.MinLength, 2 << 10},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: got %d, want %d", tc.key, tc.got, tc.want)
		}
	}
}
