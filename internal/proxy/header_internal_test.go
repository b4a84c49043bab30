package proxy

import (
	"maps"
	"net/http"
	"slices"
	"testing"
)

func TestRemoveHopByHop(t *testing.T) {
	tests := []struct {
		name string
		in   http.Header
		want []string // the header names left
	}{
		{"fixed list", http.Header{
			"Connection": {"close"}, "Keep-Alive": {"1"}, "Te": {"trailers"}, "Trailer": {"X"},
			"Transfer-Encoding": {"chunked"}, "Upgrade": {"h2c"}, "X-End": {"1"},
		}, []string{"X-End"}},
		{"named by Connection, any case and spacing", http.Header{
			"Connection": {" x-one ,X-Two", "x-three"}, "X-One": {"1"}, "X-Two": {"2"}, "X-Three": {"3"}, "X-End": {"1"},
		}, []string{"X-End"}},
		{"every Proxy-*", http.Header{
			"Proxy-Authorization": {"a"}, "Proxy-Authenticate": {"b"}, "Proxy-Connection": {"c"}, "Proxyish": {"kept"},
		}, []string{"Proxyish"}},
		{"empty Connection tokens", http.Header{"Connection": {", ,"}, "X-End": {"1"}}, []string{"X-End"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			removeHopByHop(tt.in)
			if got := slices.Sorted(maps.Keys(tt.in)); !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsEventStream(t *testing.T) {
	tests := []struct {
		ct   string
		want bool
	}{
		{"text/event-stream", true},
		{"text/event-stream; charset=utf-8", true},
		{" Text/Event-Stream ;x=1", true},
		{"text/html", false},
		{"", false},
		{"text/event-streamx", false},
	}
	for _, tt := range tests {
		if got := isEventStream(tt.ct); got != tt.want {
			t.Errorf("isEventStream(%q): got %v, want %v", tt.ct, got, tt.want)
		}
	}
}
