package app

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// An address in use is an error at once that names the key (and serve's
// flag) to change.
func TestRunAddressInUse(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, tt := range []struct{ name, yaml, want string }{
		{"front", fmt.Sprintf("server: {listen: %q}\nadmin: {listen: \"off\"}\n", taken.Addr()),
			"address already in use (another process listens there: set server.listen in the file, or --listen, to a free address)"},
		{"admin", fmt.Sprintf("server: {listen: \"127.0.0.1:0\"}\nadmin: {listen: %q}\n", taken.Addr()),
			`address already in use (another process listens there: set admin.listen in the file, or --admin, to a free address, or to "off")`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := config.Parse("t", []byte(tt.yaml))
			if err != nil {
				t.Fatal(err)
			}
			a, err := New(Options{Config: cfg, Library: testLibrary})
			if err != nil {
				t.Fatal(err)
			}
			err = a.Run(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want it to say %q", err, tt.want)
			}
		})
	}
}

// A worker command that cannot be started fails New: serve exits before
// it serves anything.
func TestNewRefusesAMissingWorkerCommand(t *testing.T) {
	cfg, err := config.Parse("t", []byte("admin: {listen: \"off\"}\nworkers: {command: [nodee-sluice-test, app.js]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(Options{Config: cfg})
	if want := `worker command "nodee-sluice-test": not found in $PATH`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestWorkerCommand(t *testing.T) {
	dir := t.TempDir()
	path := writeConfig(t, "workers: {command: [./run.sh, -x], dir: sub, env: {A: \"1\"}}\n")
	loaded, err := config.ResolveWith(path, config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	c, ok := WorkerCommand(loaded.Config, path)
	want := fmt.Sprintf("[./run.sh -x] [A=1] %s", strings.TrimSuffix(path, "/sluice.yaml")+"/sub")
	if got := fmt.Sprintf("%v %v %s", c.Args, c.Env, c.Dir); !ok || got != want {
		t.Errorf("got %q %v, want %q", got, ok, want)
	}
	if _, ok := WorkerCommand(config.Default(), dir); ok {
		t.Error("no workers: got ok")
	}
}

// SIGHUP rolls the workers whatever changed, and its log line says so; a
// POST /config/reload of the same file does not roll them.
func TestHangupLogsTheRoll(t *testing.T) {
	path := writeConfig(t, "admin: {listen: \"off\"}\nworkers: {command: [sh, w.js], count: 1}\n")
	s, logs := reloadService(t, path)
	if _, err := s.reload(); err != nil {
		t.Fatal(err)
	}
	s.hangup(context.Background()) // not running: the roll itself fails, after the log line
	var got []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, `msg="config reloaded"`) {
			_, roll, _ := strings.Cut(line, "rollWorkers=")
			got = append(got, roll)
		}
	}
	if want := []string{"false", "true"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rollWorkers of the reload, then of SIGHUP: got %q, want %q", got, want)
	}
}

// A flag wins over the file at a reload too: the file's new value of the
// key is not even a change that needs a restart.
func TestReloadKeepsFlags(t *testing.T) {
	path := writeConfig(t, "server: {listen: \"127.0.0.1:0\"}\nadmin: {listen: \"off\"}\n")
	o := config.Overrides{Flags: config.Flags{Listen: "127.0.0.1:3300"}}
	loaded, err := config.ResolveWith(path, o)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Config: loaded.Config, Source: loaded.Source, Library: testLibrary, Reload: &Reload{Path: path, Overrides: o}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.ctrl.Close)
	rewrite(t, path, "server: {listen: \"127.0.0.1:4400\"}\nadmin: {listen: \"off\"}\n")
	rep, err := a.reload()
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Restart) != 0 || a.rl.last.Server.Listen != "127.0.0.1:3300" {
		t.Errorf("got restart keys %v and listen %q, want none and the flag's 127.0.0.1:3300", rep.Restart, a.rl.last.Server.Listen)
	}
}
