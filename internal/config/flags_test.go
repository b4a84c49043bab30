package config_test

import (
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// A flag wins over the key it sets, and says which key, and which line of
// the file it overrides.
func TestFlagsOverrideTheFile(t *testing.T) {
	src := "server:\n  listen: \":3000\"\nworkers:\n  command: node w.js\n  count: 2\n"
	l, err := config.ParseWith("s.yaml", []byte(src), config.Overrides{Flags: config.Flags{
		Listen: ":3300", Admin: "off", Workers: "4", Concurrency: "1",
	}})
	if err != nil {
		t.Fatal(err)
	}
	c := l.Config
	if c.Server.Listen != ":3300" || c.Admin.Enabled() || c.Workers.Count != 4 || c.Workers.Concurrency != 1 {
		t.Errorf("got listen %q admin %q count %d concurrency %d, want :3300, off, 4, 1",
			c.Server.Listen, c.Admin.Listen, c.Workers.Count, c.Workers.Concurrency)
	}
	var got []string
	for _, o := range l.Overridden {
		got = append(got, o.String())
	}
	want := []string{
		"--listen :3300 overrides server.listen (line 2)",
		"--admin off sets admin.listen",
		"--workers 4 overrides workers.count (line 5)",
		"--concurrency 1 sets workers.concurrency",
	}
	if !slices.Equal(got, want) {
		t.Errorf("overridden:\ngot  %q\nwant %q", got, want)
	}
}

func TestFlagsAuto(t *testing.T) {
	l, err := config.ParseWith("s.yaml", []byte("workers: {command: w, count: 3, concurrency: 2}\n"),
		config.Overrides{Flags: config.Flags{Workers: "auto", Concurrency: "auto"}})
	if err != nil {
		t.Fatal(err)
	}
	if w := l.Config.Workers; w.Count != config.CountAuto || !w.Concurrency.Auto() {
		t.Errorf("got count %d concurrency %d, want auto for both", w.Count, w.Concurrency)
	}
}

// A flag's bad value is reported under the flag, with no line of the
// file; the file's own errors keep theirs.
func TestFlagsErrors(t *testing.T) {
	for _, tt := range []struct {
		name string
		src  string
		o    config.Overrides
		want []string
	}{
		{"bad listen", "", config.Overrides{Flags: config.Flags{Listen: "3300"}},
			[]string{`--listen: server.listen: "3300" is not host:port (write ":3300": port 3300 on every interface)`}},
		{"port alone for admin", "", config.Overrides{Flags: config.Flags{Admin: "9091"}},
			[]string{`--admin: admin.listen: "9091" is not host:port (write "127.0.0.1:9091": port 9091 on the loopback) (or "off" to disable)`}},
		{"bad admin", "", config.Overrides{Flags: config.Flags{Admin: "x"}},
			[]string{`--admin: admin.listen: "x" is not host:port (or "off" to disable)`}},
		{"workers without workers", "", config.Overrides{Flags: config.Flags{Workers: "2"}},
			[]string{"--workers: workers.count: needs workers to apply to: a workers section in the file, or a command after --"}},
		{"concurrency with upstreams", "upstreams: {servers: [127.0.0.1:1]}\n", config.Overrides{Flags: config.Flags{Concurrency: "2"}},
			[]string{"--concurrency: workers.concurrency: needs workers to apply to"}},
		{"bad count", "", config.Overrides{Command: []string{"w"}, Flags: config.Flags{Workers: "0"}},
			[]string{`--workers: workers.count: "0" is not a positive whole number or "auto"`}},
		{"bad concurrency", "", config.Overrides{Command: []string{"w"}, Flags: config.Flags{Concurrency: "many"}},
			[]string{`--concurrency: workers.concurrency: "many" is not a positive whole number or "auto"`}},
		{"the file's error keeps its line", "server: {drainDelay: 1h}\n", config.Overrides{Flags: config.Flags{Listen: "nope"}},
			[]string{"s.yaml:1: server.drainDelay: 1h0m0s is not shorter", `--listen: server.listen: "nope" is not host:port`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := config.ParseWith("s.yaml", []byte(tt.src), tt.o)
			list := config.List(err)
			if len(list) != len(tt.want) {
				t.Fatalf("got %v, want %d errors: %q", err, len(tt.want), tt.want)
			}
			for i, e := range list {
				if got := e.Error(); !strings.Contains(got, tt.want[i]) {
					t.Errorf("error %d: got %q, want it to contain %q", i, got, tt.want[i])
				}
			}
		})
	}
}

// A fixed --concurrency makes the file's maxConcurrency moot: a warning,
// where both in the file contradict each other (an error).
func TestFlagsConcurrencyOverMaxConcurrency(t *testing.T) {
	src := "workers: {command: w, maxConcurrency: 8}\n"
	l, err := config.ParseWith("s.yaml", []byte(src), config.Overrides{Flags: config.Flags{Concurrency: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	want := "s.yaml:1: warning: workers.maxConcurrency: has no effect: --concurrency 1 fixes each worker's concurrency"
	if len(l.Warnings) != 1 || l.Warnings[0].Error() != want {
		t.Errorf("got warnings %v, want %q", l.Warnings, want)
	}
}

func TestFlagsDefine(t *testing.T) {
	var f config.Flags
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Define(fs)
	if err := fs.Parse([]string{"--listen", ":1", "--admin=off", "--workers", "2", "--concurrency", "auto"}); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%+v", f); got != "{Listen::1 Admin:off Workers:2 Concurrency:auto}" {
		t.Errorf("got %s", got)
	}
}
