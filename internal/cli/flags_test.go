package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/demo"
)

// validate takes serve's flags and says which key each one sets, and
// which line of the file it overrides.
func TestValidateFlags(t *testing.T) {
	cfg := writeConfig(t, "server:\n  listen: \":3000\"\nworkers:\n  command: sh w.js\n  count: 2\n")
	code, stdout, stderr := validate(t, "-c", cfg, "--listen", ":3300", "--admin", "off", "--workers", "4", "--concurrency", "auto")
	want := "--listen :3300 overrides server.listen (line 2)\n" +
		"--admin off sets admin.listen\n" +
		"--workers 4 overrides workers.count (line 5)\n" +
		"--concurrency auto sets workers.concurrency\n" +
		"ok: " + cfg + "\n"
	if code != 0 || stdout != want || stderr != "" {
		t.Errorf("got %d, stdout\n%s\nstderr %q\nwant 0, stdout\n%s", code, stdout, stderr, want)
	}
	code, _, stderr = validate(t, "-c", cfg, "--listen", "3300")
	if wantErr := `--listen: server.listen: "3300" is not host:port`; code != 1 || !strings.Contains(stderr, wantErr) {
		t.Errorf("a bad flag: got %d, stderr %q; want 1 and %q", code, stderr, wantErr)
	}
	code, _, stderr = validate(t, "--print-defaults", "--listen", ":1")
	if code != 2 || !strings.Contains(stderr, "takes no -c, flags or command") {
		t.Errorf("--print-defaults with a flag: got %d, %q; want 2", code, stderr)
	}
}

// serve's flags win over the file: the front and the admin listener are
// where the flags say, with the pool the flags size.
func TestServeFlags(t *testing.T) {
	fileAddr, addr, adminAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	cfg := writeConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: "off"}
workers:
  command: [%q, demo-worker]
  count: 1
  readyPath: %s
  env: {%s: "1"}
`, fileAddr, os.Args[0], demo.ReadyPath, runMainEnv))
	startSluice(t, "serve", "-c", cfg, "--listen", addr, "--admin", adminAddr, "--workers", "2", "--concurrency", "1")
	if err := waitReady(context.Background(), "http://"+addr+"/__sluice/ready", 20*time.Second); err != nil {
		t.Fatal(err)
	}
	st := waitStats(t, adminAddr, func(s stats) bool { return s.Proxy != nil && len(s.Proxy.Endpoints) == 2 })
	for _, e := range st.Proxy.Endpoints {
		if e.Concurrency != 1 || e.Adaptive {
			t.Errorf("worker %d: got concurrency %d adaptive %v, want 1, fixed", e.ID, e.Concurrency, e.Adaptive)
		}
	}
	if code, _, _ := get("http://"+addr+"/?cpu=1", 5*time.Second); code != http.StatusOK {
		t.Errorf("GET on --listen: got %d, want 200", code)
	}
	if code, _, _ := get("http://"+fileAddr+"/__sluice/ready", time.Second); code != 0 {
		t.Errorf("the file's listen address: got %d, want nothing listening", code)
	}
}

// A worker program that cannot be started stops serve before it serves,
// with the reason.
func TestServeRefusesAMissingWorkerCommand(t *testing.T) {
	cfg := writeConfig(t, fmt.Sprintf("server: {listen: %q}\nadmin: {listen: \"off\"}\n", freeAddr(t)))
	var stderr strings.Builder
	code := dispatch(context.Background(), Extensions{}, []string{"serve", "-c", cfg, "--", "nodee-sluice-test", "app.js"}, io.Discard, &stderr)
	want := `sluice serve: supervisor: worker command "nodee-sluice-test": not found in $PATH`
	if code != 1 || !strings.Contains(stderr.String(), want) {
		t.Errorf("got %d, stderr %q; want 1 and %q", code, stderr.String(), want)
	}
}
