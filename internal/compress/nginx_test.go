//go:build linux

package compress_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/compress"
	"github.com/sluicehq/sluice/internal/testutil"
)

// The side-by-side measurement of docs/benchmarks.md ("Compression"): the
// CPU a server process spends per 1,000 responses of the 80 KB page,
// nginx's gzip against this package's middleware in a Go net/http server,
// each in its own process, loaded one request at a time over one
// keep-alive connection on 127.0.0.1 by this test, whose own CPU is not
// counted. Opt-in, it takes a minute or two:
//
//	SLUICE_COMPRESS_NGINX=1 go test -run NginxSideBySide -v ./internal/compress/

// childEnv makes the test binary a server process instead of a test run.
const childEnv = "SLUICE_COMPRESS_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		serveChild(spec)
		return
	}
	os.Exit(m.Run())
}

// serveChild serves testdata/page80.html at / (with Content-Length, as a
// proxied buffered response has it) through a Compressor of spec
// "encoding:level", or untouched for "identity". It prints its address and
// serves until killed.
func serveChild(spec string) {
	page, err := os.ReadFile("testdata/page80.html")
	if err != nil {
		panic(err)
	}
	cl := strconv.Itoa(len(page))
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Length", cl)
		_, _ = w.Write(page)
	})
	if enc, lv, ok := strings.Cut(spec, ":"); ok {
		level, _ := strconv.Atoi(lv)
		c, err := compress.New(compress.Options{Encodings: []string{enc}, GzipLevel: level, BrotliLevel: level})
		if err != nil {
			panic(err)
		}
		h = c.Wrap(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Println(ln.Addr())
	panic((&http.Server{Handler: h}).Serve(ln))
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux that matters.
const clockTicks = 100

// procCPU is the user+system CPU time of pid and of its children that are
// alive (nginx's workers), from /proc.
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	total := statCPU(t, pid)
	dirs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil {
			continue
		}
		f := statFields(b)
		if len(f) > 13 && f[1] == strconv.Itoa(pid) {
			child, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
			total += statCPU(t, child)
		}
	}
	return total
}

// statFields returns /proc/PID/stat's fields after the command name:
// state, ppid, ... (field 3 onwards of proc(5)).
func statFields(b []byte) []string {
	s := string(b)
	return strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
}

func statCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := statFields(b)
	utime, _ := strconv.Atoi(f[11]) // proc(5) fields 14 and 15
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * time.Second / clockTicks
}

// server is one process under measurement.
type server struct {
	name, ae string
	url      string
	cmd      *exec.Cmd
}

func startChild(t *testing.T, spec string) *server {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"="+spec, "GOMAXPROCS=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("child %s: %v", spec, err)
	}
	enc, _, _ := strings.Cut(spec, ":")
	if enc == "identity" {
		enc = ""
	}
	return &server{name: "sluice middleware " + spec, ae: enc, url: "http://" + strings.TrimSpace(addr) + "/", cmd: cmd}
}

// startNginx runs nginx, one worker, serving a copy of the page with gzip
// at level (0 = gzip off).
func startNginx(t *testing.T, nginx string, level int) *server {
	dir := t.TempDir()
	page, err := os.ReadFile("testdata/page80.html")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "index.html"), page, 0o644); err != nil {
		t.Fatal(err)
	}
	user := ""
	if os.Geteuid() == 0 {
		user = "user root;" // the temporary directory is not world-readable
	}
	gz := "gzip off;"
	if level > 0 {
		gz = fmt.Sprintf("gzip on; gzip_comp_level %d; gzip_min_length 1024;", level)
	}
	addr := testutil.FreeAddr(t) // nginx binds it itself: racy, see FreeAddr
	conf := fmt.Sprintf(`%s
daemon off; master_process on; worker_processes 1;
pid %[2]s/nginx.pid; error_log %[2]s/error.log;
events { worker_connections 64; }
http {
  access_log off; sendfile on; keepalive_requests 100000;
  client_body_temp_path %[2]s; proxy_temp_path %[2]s; fastcgi_temp_path %[2]s;
  uwsgi_temp_path %[2]s; scgi_temp_path %[2]s;
  types { text/html html; } # nginx compresses text/html whatever gzip_types says
  server { listen %[3]s; root %[2]s; %[4]s }
}
`, user, dir, addr, gz)
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(nginx, "-p", dir, "-c", filepath.Join(dir, "nginx.conf"))
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // its workers outlive a killed master
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// SIGTERM: the master stops and reaps its workers, then exits. If
		// it has not within 5 s, the whole group is killed.
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	url := "http://" + addr + "/index.html"
	for i := 0; ; i++ { // bounded wait for the listener
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if i == 100 {
			t.Fatalf("nginx did not listen on %s", addr)
		}
		time.Sleep(50 * time.Millisecond) // polling a process we do not control
	}
	name := "nginx gzip off"
	ae := ""
	if level > 0 {
		name, ae = fmt.Sprintf("nginx gzip_comp_level %d", level), "gzip"
	}
	return &server{name: name, ae: ae, url: url, cmd: cmd}
}

// load sends n requests one after another and returns the server's CPU
// per 1,000 responses and the bytes of one response.
func load(t *testing.T, s *server, n int) (time.Duration, int) {
	tr := &http.Transport{DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	size := 0
	get := func() {
		req, _ := http.NewRequest("GET", s.url, nil)
		if s.ae != "" {
			req.Header.Set("Accept-Encoding", s.ae)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Encoding") != s.ae {
			t.Fatalf("%s: %d %q %v", s.name, res.StatusCode, res.Header.Get("Content-Encoding"), err)
		}
		size = len(b)
	}
	for range 50 { // warm up: connection, pools, page cache
		get()
	}
	before := procCPU(t, s.cmd.Process.Pid)
	for range n {
		get()
	}
	return (procCPU(t, s.cmd.Process.Pid) - before) * 1000 / time.Duration(n), size
}

func TestNginxSideBySide(t *testing.T) {
	if os.Getenv("SLUICE_COMPRESS_NGINX") == "" {
		t.Skip("set SLUICE_COMPRESS_NGINX=1 to measure against nginx")
	}
	nginx, err := exec.LookPath("nginx")
	if err != nil {
		t.Skip("no nginx on PATH")
	}
	n, rounds := 2000, 3
	if v, err := strconv.Atoi(os.Getenv("SLUICE_COMPRESS_N")); err == nil && v > 0 {
		n = v
	}
	servers := []*server{startNginx(t, nginx, 0), startNginx(t, nginx, 1), startNginx(t, nginx, 5), startNginx(t, nginx, 6)}
	for _, spec := range []string{"identity", "gzip:1", "gzip:5", "gzip:6", "br:1", "br:2", "br:3", "br:4"} {
		servers = append(servers, startChild(t, spec))
	}
	cpu := make([][]time.Duration, len(servers))
	sizes := make([]int, len(servers))
	for range rounds { // interleaved, so that the machine's noise falls on all alike
		for i, s := range servers {
			d, size := load(t, s, n)
			cpu[i] = append(cpu[i], d)
			sizes[i] = size
		}
	}
	t.Logf("CPU per 1,000 responses of the 80 KB page (median of %d rounds of %d requests):", rounds, n)
	t.Logf("| server | bytes sent | CPU ms / 1,000 responses | rounds |")
	t.Logf("|---|---:|---:|---|")
	for i, s := range servers {
		slices.Sort(cpu[i])
		t.Logf("| %s | %d | %d | %v |", s.name, sizes[i], cpu[i][len(cpu[i])/2].Milliseconds(), cpu[i])
	}
}
