package proxy

import (
	"net/http/httptest"
	"testing"
)

// normalPath on its own, beside the end-to-end cases of path_test.go.
func TestNormalPath(t *testing.T) {
	for _, tt := range []struct {
		in, want string
		ok       bool
	}{
		{"", "", true},
		{"/", "/", true},
		{"/a/b/", "/a/b/", true},
		{"/%61%2D%2e%5F%7e", "/a-._~", true},
		{"/a%2fb", "", false},
		{"/a%5Cb", "", false},
		{"/a\\b", "", false},
		{"/a%2", "", false},
		{"/a%zz", "", false},
		{"a/b", "", false},
		{"/a//b", "", false},
		{"//", "", false},
		{"/a/%2E", "", false},
		{"/a/.%2e/", "", false},
		{"/a/..;x=1/b", "", false},
		{"/a/.;/b", "", false},
		{"/a/.../b", "/a/.../b", true},
		{"/a/%25/b", "/a/%25/b", true},
		{"/a/%C3%A9", "/a/%C3%A9", true},
	} {
		got, ok := normalPath(tt.in)
		if ok != tt.ok || (ok && got != tt.want) {
			t.Errorf("normalPath(%q): got %q %v, want %q %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// BenchmarkScreen is the checks every request passes before it is
// classified, on a browser's request.
func BenchmarkScreen(b *testing.B) {
	for _, target := range []string{"/api/users/42?page=2", "/%61pi/users/42?page=2"} {
		b.Run(target, func(b *testing.B) {
			r := httptest.NewRequest("GET", target, nil)
			for _, k := range []string{"Accept", "Accept-Encoding", "Accept-Language", "Cache-Control", "Cookie", "Dnt",
				"Sec-Ch-Ua", "Sec-Ch-Ua-Mobile", "Sec-Ch-Ua-Platform", "Sec-Fetch-Dest", "Sec-Fetch-Mode",
				"Sec-Fetch-Site", "Sec-Fetch-User", "Upgrade-Insecure-Requests", "User-Agent"} {
				r.Header.Set(k, "value")
			}
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := screen(w, r, DefaultMaxHeaderFields); !ok {
					b.Fatal("refused")
				}
			}
		})
	}
}
