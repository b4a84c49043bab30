package procnet

import (
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
)

func TestParseAddr(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"0100007F:0BB8", "127.0.0.1:3000"},
		{"00000000:1F90", "0.0.0.0:8080"},
		{"00000000000000000000000000000000:0BB8", "[::]:3000"},
		{"00000000000000000000000001000000:0050", "[::1]:80"},
		{"0000000000000000FFFF00000100007F:0BB8", "127.0.0.1:3000"},
	} {
		a, ok := ParseAddr(tt.in)
		if !ok || a != netip.MustParseAddrPort(tt.want) {
			t.Errorf("ParseAddr(%s): got %v %v, want %s", tt.in, a, ok, tt.want)
		}
	}
	if _, ok := ParseAddr("zz:1"); ok {
		t.Error("procAddr of garbage: got ok")
	}
}

func TestListening(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "net"), 0o755); err != nil {
		t.Fatal(err)
	}
	tcp := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:0BB8 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 111 1 0 100 0 0 10 0
   1: 0100007F:0BB9 0100007F:D431 01 00000000:00000000 00:00000000 00000000  1000        0 222 1 0 100 0 0 10 0
   2: garbage
`
	if err := os.WriteFile(filepath.Join(dir, "net", "tcp"), []byte(tcp), 0o644); err != nil {
		t.Fatal(err)
	}
	// No tcp6 table: it adds nothing.
	got := Listening(dir)
	want := []Socket{{netip.MustParseAddrPort("127.0.0.1:3000"), "111"}}
	if !slices.Equal(got, want) {
		t.Errorf("Listening = %v; want %v (the listener alone)", got, want)
	}
}

// The real thing: this test's listener is among this namespace's, and its
// socket among this process's.
func TestListeningAndSocketsReal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	addr := netip.MustParseAddrPort(l.Addr().String())
	socks := Listening("/proc")
	i := slices.IndexFunc(socks, func(s Socket) bool { return s.Addr == addr })
	if i < 0 {
		t.Fatalf("Listening(/proc) lacks %s", addr)
	}
	inode := socks[i].Inode
	found := false
	Sockets("/proc", os.Getpid(), func(in string) bool {
		found = in == inode
		return !found
	})
	if !found {
		t.Errorf("Sockets of this process lack the listener's socket %s", inode)
	}
}
