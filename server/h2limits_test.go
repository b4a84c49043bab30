package server_test

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/sluicehq/sluice/server"
	"golang.org/x/net/http2"
)

// The server advertises bounded HTTP/2 settings: streams per connection,
// the largest frame it reads, and the window a client may fill per stream.
func TestHTTP2Settings(t *testing.T) {
	tests := []struct {
		name    string
		streams int
		want    map[http2.SettingID]uint32
	}{
		{"defaults", 0, map[http2.SettingID]uint32{
			http2.SettingMaxConcurrentStreams: server.DefaultMaxConcurrentStreams,
			http2.SettingMaxFrameSize:         16 << 10,
			http2.SettingInitialWindowSize:    256 << 10,
		}},
		{"MaxConcurrentStreams", 7, map[http2.SettingID]uint32{http2.SettingMaxConcurrentStreams: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, &server.Server{H2C: true, MaxConcurrentStreams: tt.streams})
			c, err := net.Dial("tcp", r.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(bound))
			if _, err := io.WriteString(c, http2.ClientPreface); err != nil {
				t.Fatal(err)
			}
			fr := http2.NewFramer(c, c)
			if err := fr.WriteSettings(); err != nil {
				t.Fatal(err)
			}
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			sf, ok := f.(*http2.SettingsFrame)
			if !ok {
				t.Fatalf("first frame: got %T, want SETTINGS", f)
			}
			for id, want := range tt.want {
				if got, ok := sf.Value(id); !ok || got != want {
					t.Errorf("%v: got %d (sent %v), want %d", id, got, ok, want)
				}
			}
		})
	}
}
