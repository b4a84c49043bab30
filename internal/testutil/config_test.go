package testutil

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestWriteConfigAndRewrite(t *testing.T) {
	path := WriteConfig(t, "a: 1\n")
	if filepath.Base(path) != "sluice.yaml" {
		t.Errorf("path %s, want a sluice.yaml", path)
	}
	Rewrite(t, path, "b: 2\n")
	got, err := os.ReadFile(path)
	if err != nil || string(got) != "b: 2\n" {
		t.Errorf("read %q, %v; want the rewritten content", got, err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, %v; want 0600 (a config may hold secrets)", fi.Mode().Perm(), err)
	}
}

func TestTCPPair(t *testing.T) {
	client, server := TCPPair(t)
	if _, err := client.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4)
	if _, err := io.ReadFull(server, buf); err != nil || string(buf) != "ping" {
		t.Errorf("server read %q, %v; want what the client wrote", buf, err)
	}
	if client.LocalAddr().String() != server.RemoteAddr().String() {
		t.Errorf("client %v, server's peer %v: want the two ends of one connection", client.LocalAddr(), server.RemoteAddr())
	}
}
