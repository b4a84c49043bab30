package cli

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

func validate(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runValidate(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestValidateExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(good, []byte("server:\n  listen: \":8080\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte("server:\n  listen: 8080\n  keepAliveTimout: 5s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noEffect := filepath.Join(dir, "no-effect.yaml")
	if err := os.WriteFile(noEffect, []byte("server:\n  backpressure: {maxLimit: 50}\nworkers:\n  command: sh w.js\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	missingProgram := filepath.Join(dir, "missing-program.yaml")
	if err := os.WriteFile(missingProgram, []byte("workers:\n  command: ./missing.sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	noCommand := filepath.Join(dir, "no-command.yaml")
	if err := os.WriteFile(noCommand, []byte("workers:\n  count: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name       string
		args       []string
		code       int
		stdout     string // exact, when not ""
		stdoutHas  string
		stderrHas  []string
		stderrNone bool
	}{
		{name: "valid file", args: []string{"-c", good}, code: 0, stdout: "ok: " + good + "\n", stderrNone: true},
		{name: "example file", args: []string{"-c", "../../examples/sluice.yaml"}, code: 0, stdout: "ok: ../../examples/sluice.yaml\n", stderrNone: true},
		{name: "react-ssr example", args: []string{"-c", "../../examples/react-ssr/sluice.yaml"}, code: 0, stdout: "ok: ../../examples/react-ssr/sluice.yaml\n", stderrNone: true},
		{name: "every error", args: []string{"-c", bad}, code: 1, stderrHas: []string{
			bad + ":2: server.listen: want a string",
			bad + ":3: server.keepAliveTimout: unknown key (did you mean keepAliveTimeout?)",
		}},
		{name: "missing file", args: []string{"-c", filepath.Join(dir, "missing.yaml")}, code: 1, stderrHas: []string{"no such file"}},
		{name: "unknown flag", args: []string{"-x"}, code: 2, stderrHas: []string{"flag provided but not defined: -x", "usage: sluice validate"}},
		{name: "positional argument", args: []string{good}, code: 2, stderrHas: []string{"unexpected argument", "usage: sluice validate"}},
		{name: "print-defaults with -c", args: []string{"--print-defaults", "-c", good}, code: 2, stderrHas: []string{"takes no -c"}},
		{name: "print-defaults with a command", args: []string{"--print-defaults", "--", "node"}, code: 2, stderrHas: []string{"takes no -c, flags or command"}},
		{name: "help", args: []string{"-h"}, code: 0, stdoutHas: "usage: sluice validate [-c FILE] [--strict] [--print-defaults[=front]] [serve's flags] [-- worker command...]", stderrNone: true},
		{name: "warning: exit 0", args: []string{"-c", noEffect}, code: 0, stdout: "ok: " + noEffect + " (1 warning)\n",
			stderrHas: []string{noEffect + ":2: warning: server.backpressure.maxLimit: has no effect with workers"}},
		{name: "warning with --strict: exit 1", args: []string{"--strict", "-c", noEffect}, code: 1,
			stderrHas: []string{noEffect + ":2: warning: server.backpressure.maxLimit", "1 warning (--strict)"}},
		{name: "workers without a command", args: []string{"-c", noCommand}, code: 1, stderrHas: []string{noCommand + ":1: workers.command: must name the program"}},
		{name: "the command after --", args: []string{"-c", noCommand, "--", "sh", "worker.js"}, code: 0, stdout: "ok: " + noCommand + "\n", stderrNone: true},
		{name: "a command that cannot be started", args: []string{"-c", noCommand, "--", "nodee-sluice-test", "app.js"}, code: 1,
			stderrHas: []string{`sluice validate: supervisor: worker command "nodee-sluice-test": not found in $PATH`}},
		{name: "a file's command that cannot be started", args: []string{"-c", missingProgram}, code: 1,
			stderrHas: []string{`worker command "./missing.sh": ./missing.sh: no such file`}},
		{name: "a command in the file and after --", args: []string{"-c", noEffect, "--", "node"}, code: 1, stderrHas: []string{noEffect + ":4: workers.command: is also given after --"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := validate(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit code: got %d, want %d (stderr %q)", code, tc.code, stderr)
			}
			if tc.stdout != "" && stdout != tc.stdout {
				t.Errorf("stdout: got %q, want %q", stdout, tc.stdout)
			}
			if !strings.Contains(stdout, tc.stdoutHas) {
				t.Errorf("stdout: got %q, want it to contain %q", stdout, tc.stdoutHas)
			}
			if tc.stderrNone && stderr != "" {
				t.Errorf("stderr: got %q, want nothing", stderr)
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr: got %q, want it to contain %q", stderr, s)
				}
			}
		})
	}
}

func TestValidateErrorsOnePerLine(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.yaml")
	src := "server:\n  backpressure:\n    minLimit: 50\n    maxLimit: 10\nworkers:\n  count: 0\n"
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := validate(t, "-c", p)
	want := p + ":3: server.backpressure.minLimit: 50 is greater than maxLimit (10)\n" +
		p + ":5: workers.command: must name the program to run (here, or after -- on the sluice serve command line)\n" +
		p + ":6: workers.count: 0 is not a positive whole number or \"auto\"\n"
	if code != 1 || stdout != "" || stderr != want {
		t.Errorf("got %d, stdout %q, stderr\n%s\nwant 1, no stdout, stderr\n%s", code, stdout, stderr, want)
	}
}

func TestValidateFindsDefaultFile(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	code, stdout, _ := validate(t)
	if code != 0 || stdout != "ok: built-in defaults\n" {
		t.Errorf("no file: got %d %q, want 0 \"ok: built-in defaults\\n\"", code, stdout)
	}
	if err := os.WriteFile(filepath.Join(dir, config.DefaultFile), []byte("admin:\n  listen: \"off\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = validate(t)
	if code != 0 || stdout != "ok: sluice.yaml\n" {
		t.Errorf("./sluice.yaml: got %d %q, want 0 \"ok: sluice.yaml\\n\"", code, stdout)
	}
}

func TestValidatePrintDefaults(t *testing.T) {
	code, stdout, stderr := validate(t, "--print-defaults")
	if code != 0 || stderr != "" {
		t.Fatalf("got %d, stderr %q; want 0 and no stderr", code, stderr)
	}
	if !strings.Contains(stdout, "# ") || !strings.Contains(stdout, "keepAliveTimeout: 65s") {
		t.Errorf("got %q, want commented YAML with every default", stdout)
	}
	cfg, err := config.Parse("print-defaults", []byte(stdout))
	if err != nil {
		t.Fatalf("the printed defaults do not parse: %v", err)
	}
	if want := config.Default(); !reflect.DeepEqual(cfg, want) {
		t.Errorf("the printed defaults parse to %+v, want %+v", cfg, want)
	}
}

// --print-defaults=front leaves out the keys of library mode: with workers
// added, the file it prints is quiet.
func TestValidatePrintFrontDefaults(t *testing.T) {
	code, stdout, stderr := validate(t, "--print-defaults=front")
	if code != 0 || stderr != "" {
		t.Fatalf("got %d, stderr %q; want 0 and no stderr", code, stderr)
	}
	if !strings.Contains(stdout, "keepAliveTimeout: 65s") || strings.Contains(stdout, "algorithm:") {
		t.Errorf("got %q, want the defaults without server.backpressure.algorithm", stdout)
	}
	path := filepath.Join(t.TempDir(), "front.yaml")
	if err := os.WriteFile(path, []byte(stdout+"workers: {command: [sh, -c, \"exit 0\"]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := validate(t, "--strict", "-c", path); code != 0 {
		t.Errorf("the front defaults with workers: got %d %q, want 0 and no warning", code, stderr)
	}
	if code, _, stderr := validate(t, "--print-defaults=back"); code != 2 || !strings.Contains(stderr, "not all or front") {
		t.Errorf("--print-defaults=back: got %d %q, want 2, a usage error", code, stderr)
	}
}
