// Package attack is sluice's attack suite: Go tests that attack a built
// `sluice serve` over real loopback sockets, as a client on the public edge
// could, and check that it survives with its memory, goroutines and worker
// slots bounded. Every test is bounded in connections and time (seconds),
// talks to 127.0.0.1 only, and stops the processes it started.
//
// This file is the shared harness; each concern has its own *_test.go
// file. To write a case:
//
//	s := Start(t, `
//	server: {listen: {{listen}}, drainDelay: 0s}
//	admin: {listen: {{admin}}}
//	`+DemoWorkers(1))
//	// attack s.Addr, read s.Stats(t), s.RSS(t) ...
//	s.Stop(t) // SIGTERM; fails the test unless sluice exits 0
//
// The sluice binary is built once per test binary, by TestMain, without the
// race detector: memory figures are sluice's own, not the detector's.
package attack

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// bound caps every wait on sluice: generous for two loaded cores, short
// enough that a hang fails the test instead of stalling the run.
const bound = 20 * time.Second

// sluiceBin is the sluice binary TestMain built.
var sluiceBin string

func TestMain(m *testing.M) {
	os.Exit(testutil.MainWithSluice(m, filepath.Join("..", ".."), &sluiceBin))
}

// DemoWorkers is a workers section running n of sluice's embedded demo
// workers (`sluice demo-worker`: ?cpu=<ms>&sleep=<ms>, single-threaded),
// for Start's config.
func DemoWorkers(n int) string {
	return fmt.Sprintf("workers:\n  command: [{{sluice}}, demo-worker]\n  count: %d\n  concurrency: 1\n  readyPath: /__worker/ready\n  slowStart: 0s\n", n)
}

// Upstream serves h on a loopback port for the test's duration and returns
// an upstreams section for Start's config: a worker whose behaviour the
// test writes (a huge response, say).
func Upstream(t *testing.T, h http.Handler, concurrency int) string {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return fmt.Sprintf("upstreams:\n  servers:\n    - address: %s\n      concurrency: %d\n", srv.Listener.Addr(), concurrency)
}

// Sluice is a running `sluice serve`.
type Sluice struct {
	Addr  string // the main listener, 127.0.0.1:port
	Admin string // the admin listener, 127.0.0.1:port
	PID   int

	p *testutil.Process
}

// Start writes cfg to a file and runs `sluice serve -c` on it, waiting until
// readiness answers 200. In cfg, {{listen}} and {{admin}} become free
// loopback addresses and {{sluice}} the binary's path (all quoted); set
// server.drainDelay: 0s for a quick Stop. Cleanup kills
// sluice's process group if the test did not Stop it, and prints its log
// when the test failed.
func Start(t *testing.T, cfg string) *Sluice {
	t.Helper()
	s := &Sluice{Addr: testutil.FreeAddr(t), Admin: testutil.FreeAddr(t)}
	cfg = strings.NewReplacer(
		"{{listen}}", strconv.Quote(s.Addr),
		"{{admin}}", strconv.Quote(s.Admin),
		"{{sluice}}", strconv.Quote(sluiceBin),
	).Replace(cfg)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("config:\n%s", cfg)
		}
	})
	s.p = testutil.StartProcess(t, exec.Command(sluiceBin, "serve", "-c", path), 0)
	s.PID = s.p.PID()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := testutil.WaitOK(ctx, "http://"+s.Addr+"/__sluice/ready", s.p.Done()); err != nil {
		t.Fatalf("sluice not ready: %v (%v)", err, s.p.Err())
	}
	return s
}

// Alive reports whether the sluice process is still running.
func (s *Sluice) Alive() bool { return s.p.Running() }

// Output returns the last n bytes sluice wrote to stdout and stderr.
func (s *Sluice) Output(n int) string { return s.p.Out.Tail(n) }

// Stop sends SIGTERM and fails the test unless sluice exits 0 within
// bound: a clean drain, its workers stopped. Close the test's own
// connections first: the drain waits for them.
func (s *Sluice) Stop(t *testing.T) {
	t.Helper()
	if !s.Alive() {
		t.Errorf("sluice had already exited: %v", s.p.Err())
		return
	}
	if !s.p.Stop(bound) {
		t.Errorf("sluice did not exit within %v of SIGTERM", bound)
		return
	}
	if code := s.p.Cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("sluice exit code: got %d, want 0", code)
	}
}

// Stats is the part of the admin /stats document the attacks read; Raw
// holds all of it.
type Stats struct {
	Conns struct {
		Open      int64  `json:"open"`
		Idle      int64  `json:"idle"`
		ProbeOnly int64  `json:"probeOnly"`
		Refused   uint64 `json:"refused"`
		Reclaimed uint64 `json:"reclaimed"`
	} `json:"conns"`
	Proxy struct {
		Outstanding       int    `json:"outstanding"`
		WastedRenders     uint64 `json:"wastedRenders"`
		BodyTooLarge      uint64 `json:"bodyTooLarge"`
		BodyNoMemory      uint64 `json:"bodyNoMemory"`
		StreamedForMemory uint64 `json:"streamedForMemory"`
		Unsolicited       uint64 `json:"unsolicited"`
		BufferedBytes     int64  `json:"bufferedBytes"`
		BufferedPeak      int64  `json:"bufferedPeak"`
		BufferBudget      int64  `json:"bufferBudget"`
	} `json:"proxy"`
	Admission struct {
		Inflight int `json:"inflight"`
		Queued   int `json:"queued"`
	} `json:"admission"`
	Raw map[string]any `json:"-"`
}

// Stats reads the admin /stats document.
func (s *Sluice) Stats(t *testing.T) Stats {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	code, body := testutil.Get(ctx, "http://"+s.Admin+"/stats")
	if code != http.StatusOK {
		t.Fatalf("admin /stats: got %d %q", code, body)
	}
	var st Stats
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("admin /stats: %v", err)
	}
	json.Unmarshal([]byte(body), &st.Raw)
	return st
}

// WaitStats polls /stats until cond holds, failing the test after bound.
func (s *Sluice) WaitStats(t *testing.T, what string, cond func(Stats) bool) Stats {
	t.Helper()
	deadline := time.Now().Add(bound)
	for {
		st := s.Stats(t)
		if cond(st) {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within %v (last /stats: %+v)", what, bound, st)
		}
		time.Sleep(20 * time.Millisecond) // polling another process
	}
}

// Memory is the process's resident memory, from /proc/PID/status.
type Memory struct {
	RSS  int64 // VmRSS: resident now, bytes
	Peak int64 // VmHWM: the most ever resident, bytes
}

// Memory reads sluice's resident memory (its workers are not counted).
func (s *Sluice) Memory(t *testing.T) Memory {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID) + "/status")
	if err != nil {
		t.Fatalf("reading sluice's memory: %v", err)
	}
	var m Memory
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			m.RSS = kb << 10
		case "VmHWM:":
			m.Peak = kb << 10
		}
	}
	return m
}

// Goroutines reads sluice's goroutine count from the admin pprof endpoint
// (admin.pprof must be on; it is off by default).
func (s *Sluice) Goroutines(t *testing.T) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	code, body := testutil.Get(ctx, "http://"+s.Admin+"/debug/pprof/goroutine?debug=1")
	first, _, _ := strings.Cut(body, "\n")
	n, err := strconv.Atoi(strings.TrimPrefix(first, "goroutine profile: total "))
	if code != http.StatusOK || err != nil {
		t.Fatalf("admin goroutine profile: got %d %q", code, first)
	}
	return n
}

// Dial opens a raw TCP connection to addr, closed at the end of the test.
func Dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, bound)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// RoundTrip writes a raw request on c and reads one response, with a
// deadline of bound; status 0 when the connection closed unanswered.
func RoundTrip(t *testing.T, c net.Conn, raw string) (int, http.Header) {
	t.Helper()
	c.SetDeadline(time.Now().Add(bound))
	defer c.SetDeadline(time.Time{})
	if _, err := io.WriteString(c, raw); err != nil {
		return 0, nil
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0, nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header
}

// requireLinux skips tests that read /proc.
func requireLinux(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
}
