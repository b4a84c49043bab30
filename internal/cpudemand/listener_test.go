package cpudemand

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// procHex writes an address as /proc/net/tcp{,6} does.
func procHex(a netip.Addr) string {
	b := a.AsSlice()
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		w := make([]byte, 4)
		binary.NativeEndian.PutUint32(w, binary.BigEndian.Uint32(b[i:]))
		fmt.Fprintf(&sb, "%02X%02X%02X%02X", w[0], w[1], w[2], w[3])
	}
	return sb.String()
}

// tcpTable writes a /proc/net table of sockets: each is address, state,
// inode.
func (f *fakeProc) tcpTable(name string, socks ...[3]string) {
	f.t.Helper()
	var sb strings.Builder
	sb.WriteString("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n")
	for i, s := range socks {
		ap := netip.MustParseAddrPort(s[0])
		fmt.Fprintf(&sb, "%4d: %s:%04X 00000000:0000 %s 00000000:00000000 00:00000000 00000000  1000        0 %s 1 0 100 0 0 10 0\n",
			i, procHex(ap.Addr()), ap.Port(), s[1], s[2])
	}
	dir := filepath.Join(f.root, "net")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(sb.String()), 0o644); err != nil {
		f.t.Fatal(err)
	}
}

// fd gives process pid a file descriptor open on target.
func (f *fakeProc) fd(pid, fd int, target string) {
	f.t.Helper()
	dir := filepath.Join(f.root, fmt.Sprint(pid), "fd")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		f.t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, fmt.Sprint(fd))); err != nil {
		f.t.Fatal(err)
	}
}

func TestListenerPid(t *testing.T) {
	p := newFakeProc(t)
	p.tcpTable("tcp",
		[3]string{"127.0.0.1:8080", "01", "111"}, // an established connection
		[3]string{"10.0.0.1:8080", "0A", "222"},  // not loopback
		[3]string{"127.0.0.1:8081", "0A", "333"}, // another port
		[3]string{"127.0.0.1:8080", "0A", "444"}, // the listener
	)
	p.tcpTable("tcp6", [3]string{"[::]:9090", "0A", "555"})
	p.fd(30, 0, "/dev/null")
	p.fd(30, 3, "socket:[111]")
	p.fd(30, 4, "socket:[222]")
	p.fd(40, 5, "socket:[444]")
	p.fd(41, 5, "socket:[444]") // a child that inherited it
	p.fd(50, 7, "socket:[555]")
	for _, tt := range []struct {
		addr string
		pid  int
		err  error
	}{
		{"127.0.0.1:8080", 40, nil},
		{"127.0.0.1:9090", 50, nil}, // the IPv6 wildcard serves IPv4 loopback
		{"[::1]:9090", 50, nil},
		{"127.0.0.1:7070", 0, ErrNotFound},
	} {
		pid, err := ListenerPid(p.root, tt.addr)
		if pid != tt.pid || !errors.Is(err, tt.err) {
			t.Errorf("ListenerPid(%s) = %d, %v; want %d, %v", tt.addr, pid, err, tt.pid, tt.err)
		}
	}
	for _, bad := range []string{"10.0.0.1:8080", "localhost:8080", "127.0.0.1"} {
		if _, err := ListenerPid(p.root, bad); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("ListenerPid(%s): got %v; want an error about the address", bad, err)
		}
	}
}

// A Meter of a listener finds the worker behind it, and the one that
// replaces it when it is restarted by something other than sluice.
func TestListenerMeterFollowsRestarts(t *testing.T) {
	p := newFakeProc(t)
	p.tcpTable("tcp", [3]string{"127.0.0.1:8080", "0A", "444"})
	p.fd(40, 5, "socket:[444]")
	p.thread(40, 40, time.Second, 0)
	m := NewListener(p.root, "127.0.0.1:8080")
	m.Read(t0)
	p.thread(40, 40, time.Second+50*time.Millisecond, 0)
	if d, ok := m.Read(t0.Add(100 * time.Millisecond)); !ok || !near(d, 0.5) {
		t.Fatalf("Read = %v, %v; want 0.5, true", d, ok)
	}
	// Restarted: a new process, a new socket.
	p.exit(40)
	p.tcpTable("tcp", [3]string{"127.0.0.1:8080", "0A", "445"})
	p.fd(41, 5, "socket:[445]")
	p.thread(41, 41, 100*time.Millisecond, 0)
	if _, ok := m.Read(t0.Add(200 * time.Millisecond)); ok {
		t.Fatal("a reading was given for a process that exited")
	}
	at := t0.Add(200*time.Millisecond + resolveEvery)
	m.Read(at)
	p.thread(41, 41, 130*time.Millisecond, 0)
	if d, ok := m.Read(at.Add(100 * time.Millisecond)); !ok || !near(d, 0.3) {
		t.Fatalf("after the restart: Read = %v, %v; want the new process's 0.3, true", d, ok)
	}
}

// A listener that is never found (another user's) is looked for less and
// less often: each look reads every process's file descriptors.
func TestListenerLookupBacksOff(t *testing.T) {
	p := newFakeProc(t)
	p.tcpTable("tcp")
	p.thread(40, 40, time.Second, 0)
	m := NewListener(p.root, "127.0.0.1:8080")
	var looks []time.Duration
	for at := time.Duration(0); at < 2*time.Minute; at += 100 * time.Millisecond {
		before := m.resolvedAt
		m.Read(t0.Add(at))
		if !m.resolvedAt.Equal(before) {
			looks = append(looks, at)
		}
	}
	want := []time.Duration{0, 5 * time.Second, 15 * time.Second, 35 * time.Second, 75 * time.Second}
	if !slices.Equal(looks, want) {
		t.Fatalf("looked at %v; want %v", looks, want)
	}
	// Found at last: measured, and looked for again soon if it goes.
	p.tcpTable("tcp", [3]string{"127.0.0.1:8080", "0A", "444"})
	p.fd(40, 5, "socket:[444]")
	at := t0.Add(155 * time.Second)
	m.Read(at)
	p.thread(40, 40, time.Second+50*time.Millisecond, 0)
	if _, ok := m.Read(at.Add(100 * time.Millisecond)); !ok || m.resolveWait != resolveEvery {
		t.Fatalf("found: reading given %v, next look after %v; want true, %v", ok, m.resolveWait, resolveEvery)
	}
}

// The real thing: this test's own listener is found as this process.
func TestListenerPidReal(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	pid, err := ListenerPid("/proc", l.Addr().String())
	if err != nil || pid != os.Getpid() {
		t.Fatalf("ListenerPid(%s) = %d, %v; want this process, %d", l.Addr(), pid, err, os.Getpid())
	}
}
