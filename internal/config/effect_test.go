package config_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/config"
)

// warnings parses src with o and returns its warnings as "line path", and
// the messages by path.
func warnings(t *testing.T, src string, o config.Overrides) ([]string, map[string]string) {
	t.Helper()
	l, err := config.ParseWith("s.yaml", []byte(src), o)
	if err != nil {
		t.Fatalf("got error %v, want warnings only", err)
	}
	var got []string
	msgs := make(map[string]string)
	for _, w := range l.Warnings {
		if !w.Warning {
			t.Errorf("%v: got Warning false in Warnings", w)
		}
		got = append(got, fmt.Sprintf("%d %s", w.Line, w.Path))
		msgs[w.Path] = w.Msg
	}
	return got, msgs
}

func TestWarnings(t *testing.T) {
	const workers = "workers:\n  command: node w.js\n"
	for _, tt := range []struct {
		name string
		src  string
		o    config.Overrides
		want []string // "line path", in file order
		msg  string   // in the first warning's message, when set
	}{
		{
			name: "front mode: the process-wide algorithm's keys",
			src:  "server:\n  backpressure:\n    algorithm: gradient\n    initialLimit: 10\n    minLimit: 5\n    maxLimit: 50\n    sampleWindow: 200ms\n" + workers,
			want: []string{"3 server.backpressure.algorithm", "4 server.backpressure.initialLimit", "5 server.backpressure.minLimit", "6 server.backpressure.maxLimit", "7 server.backpressure.sampleWindow"},
			msg:  "has no effect with workers: each worker has its own limit",
		},
		{
			name: "front mode: a key written at its default is quiet",
			src:  "server:\n  backpressure:\n    algorithm: " + config.Default().Server.Backpressure.Algorithm + "\n    minLimit: 1\n    sampleWindow: 1s\n" + workers,
		},
		{
			name: "front mode: keys that still act are quiet",
			src:  "server:\n  maxConcurrentRequests: 30\n  backpressure:\n    enabled: true\n    smoothingFactor: 0.5\n    queueSize: 10\n    queueTimeout: 1s\nproxy:\n  saturationMax: 0.8\n" + workers,
		},
		{
			name: "front mode: minLimit above maxConcurrentRequests is no contradiction, only unused",
			src:  "server:\n  maxConcurrentRequests: 2\n  backpressure: {minLimit: 5}\n" + workers,
			want: []string{"3 server.backpressure.minLimit"},
		},
		{
			name: "an obsolete key warns even at its old default",
			src:  "proxy:\n  retryIdempotent: true\n" + workers,
			want: []string{"2 proxy.retryIdempotent"},
			msg:  "has no effect and is deprecated: a request is sent to another worker only when none of it reached the first",
		},
		{
			name: "upstreams say so",
			src:  "server:\n  backpressure: {maxLimit: 20}\nupstreams:\n  servers: [127.0.0.1:1]\n",
			want: []string{"2 server.backpressure.maxLimit"},
			msg:  "has no effect with upstreams",
		},
		{
			name: "saturationMax with only fixed workers",
			src:  "proxy:\n  saturationMax: 0.8\nworkers:\n  command: w\n  concurrency: 1\n",
			want: []string{"2 proxy.saturationMax"},
			msg:  "at a fixed concurrency",
		},
		{
			name: "saturationMax with one adaptive upstream",
			src:  "proxy: {saturationMax: 0.8}\nupstreams:\n  servers: [{address: \"127.0.0.1:1\", concurrency: 1}, 127.0.0.1:2]\n",
		},
		{
			name: "front mode: the old key of the workers' saturation is deprecated, named whatever its spelling",
			src:  "server:\n  backpressure:\n    eluMax: 0.8\n" + workers,
			want: []string{"3 server.backpressure.saturationMax"},
			msg:  "is deprecated with workers: it is taken for proxy.saturationMax",
		},
		{
			name: "front mode: the old key beside the new one is unused",
			src:  "server:\n  backpressure:\n    saturationMax: 0.8\nproxy:\n  saturationMax: 0.7\n" + workers,
			want: []string{"3 server.backpressure.saturationMax"},
			msg:  "proxy.saturationMax, also written",
		},
		{
			name: "library mode: saturationMax is the process's, and the proxy's is unused",
			src:  "server:\n  backpressure:\n    saturationMax: 0.8\nproxy:\n  saturationMax: 0.7\n",
			want: []string{"5 proxy.saturationMax"},
			msg:  "nothing is proxied",
		},
		{
			name: "library mode: the proxy's keys",
			src:  "proxy:\n  pingPath: /p\n  timeout: 5s\n  maxBodyBytes: 1MiB\n  bufferResponseBytes: 0\n  retryIdempotent: false\n",
			want: []string{"3 proxy.timeout", "4 proxy.maxBodyBytes", "5 proxy.bufferResponseBytes", "6 proxy.retryIdempotent"},
			msg:  "without workers or upstreams: nothing is proxied",
		},
		{
			name: "library mode: a route's fallback, not its timeout",
			src:  "routes:\n  - timeout: 2s\n    fallback: {body: shell}\n",
			want: []string{"3 routes[0].fallback"},
			msg:  "without workers or upstreams: nothing is proxied",
		},
		{
			name: "library mode: a route's stream bounds",
			src:  "routes:\n  - streamIdleTimeout: 2s\n    streamTimeout: 1m\n",
			want: []string{"2 routes[0].streamIdleTimeout", "3 routes[0].streamTimeout"},
			msg:  "nothing is proxied",
		},
		{
			name: "library mode: the proxy's keys count in front mode",
			src:  "proxy: {timeout: 5s}\n" + workers,
		},
		{
			name: "the command line makes it front mode",
			src:  "server:\n  backpressure: {algorithm: gradient}\n",
			o:    config.Overrides{Command: []string{"node", "w.js"}},
			want: []string{"2 server.backpressure.algorithm"},
			msg:  "with workers",
		},
		{
			name: "backpressure off, library mode",
			src:  "server:\n  backpressure:\n    enabled: false\n    algorithm: gradient\n    queueSize: 50\n",
			want: []string{"4 server.backpressure.algorithm", "5 server.backpressure.queueSize"},
			msg:  "with server.backpressure.enabled false: only server.maxConcurrentRequests limits",
		},
		{
			name: "backpressure off, front mode: the front's reason comes first",
			src:  "server:\n  backpressure:\n    enabled: false\n    algorithm: gradient\n    queueTimeout: 3s\n" + workers,
			want: []string{"4 server.backpressure.algorithm", "5 server.backpressure.queueTimeout"},
			msg:  "with workers",
		},
		{
			name: "no queue: its discipline",
			src:  "server:\n  backpressure: {queueSize: 0}\noverload:\n  priorityMinShare: 0.2\n  codel: {target: 10ms}\ntenants: {maxQueuedPerTenant: 5}\n",
			want: []string{"4 overload.priorityMinShare", "5 overload.codel.target", "6 tenants.maxQueuedPerTenant"},
			msg:  "without a queue",
		},
		{
			name: "codel off",
			src:  "overload:\n  codel:\n    enabled: false\n    target: 10ms\n    interval: 1s\n  adaptiveLifo: false\n",
			want: []string{"4 overload.codel.target", "5 overload.codel.interval", "6 overload.adaptiveLifo"},
			msg:  "with overload.codel.enabled false",
		},
		{
			name: "compression off",
			src:  "compression:\n  enabled: false\n  gzipLevel: 9\n  encodings: [gzip]\n",
			want: []string{"3 compression.gzipLevel", "4 compression.encodings"},
			msg:  "with compression.enabled false",
		},
		{
			name: "a warm-up path with no warm-up",
			src:  "workers:\n  command: w\n  warmupPath: /home\n",
			want: []string{"3 workers.warmupPath"},
		},
		{
			name: "nothing written",
			src:  "",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, msgs := warnings(t, tt.src, tt.o)
			if !slices.Equal(got, tt.want) {
				t.Fatalf("got warnings %q, want %q", got, tt.want)
			}
			if tt.msg != "" {
				path := strings.Fields(tt.want[0])[1]
				if !strings.Contains(msgs[path], tt.msg) {
					t.Errorf("%s: got %q, want it to contain %q", path, msgs[path], tt.msg)
				}
			}
		})
	}
}

func TestWarningFormat(t *testing.T) {
	l, err := config.ParseWith("s.yaml", []byte("server:\n  backpressure:\n    minLimit: 5\nworkers: {command: w}\n"), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 1 {
		t.Fatalf("got %d warnings, want 1", len(l.Warnings))
	}
	want := "s.yaml:3: warning: server.backpressure.minLimit: has no effect with workers"
	if got := l.Warnings[0].Error(); !strings.HasPrefix(got, want) {
		t.Errorf("got %q, want it to start %q", got, want)
	}
}

// A file with an error reports the error, not the warnings of a
// configuration that will not run; Parse and Resolve drop warnings.
func TestWarningsAreNotErrors(t *testing.T) {
	src := "server:\n  backpressure: {minLimit: 5}\nworkers: {command: w}\n"
	if _, err := config.Parse("s.yaml", []byte(src)); err != nil {
		t.Errorf("Parse: got %v, want a warning not to fail", err)
	}
	_, err := config.ParseWith("s.yaml", []byte(src+"admin: {listen: x}\n"), config.Overrides{})
	list := config.List(err)
	if len(list) != 1 || list[0].Warning || list[0].Path != "admin.listen" {
		t.Errorf("got %v, want only the admin.listen error", err)
	}
	c, err := config.Parse("s.yaml", []byte("workers: {command: w}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c.Server.Backpressure.MinLimit = 5
	if err := c.Validate(); err != nil {
		t.Errorf("Validate of a Go-built config: got %v, want nil (no file, no warnings)", err)
	}
}

func TestOverridesCommand(t *testing.T) {
	cmd := config.Overrides{Command: []string{"node", "worker.js"}}
	for _, tt := range []struct {
		name    string
		src     string
		o       config.Overrides
		wantErr string // "line path: message", when the result is an error
		check   func(t *testing.T, w *config.Workers)
	}{
		{
			name: "fills a workers section without a command",
			src:  "workers:\n  count: 3\n  concurrency: 2\n",
			o:    cmd,
			check: func(t *testing.T, w *config.Workers) {
				if strings.Join(w.Command, " ") != "node worker.js" || w.Count != 3 || w.Concurrency != 2 {
					t.Errorf("got command %q count %d concurrency %d, want node worker.js, 3, 2", w.Command, w.Count, w.Concurrency)
				}
			},
		},
		{
			name: "adds a workers section with its defaults",
			src:  "server: {listen: \":1\"}\n",
			o:    cmd,
			check: func(t *testing.T, w *config.Workers) {
				if strings.Join(w.Command, " ") != "node worker.js" || w.Count != config.CountAuto || !w.Concurrency.Auto() || w.MaxConcurrency != 64 || w.StopTimeout == 0 {
					t.Errorf("got %+v, want node worker.js with the section's defaults", w)
				}
			},
		},
		{
			name:    "a command in both places",
			src:     "workers:\n  count: 2\n  command: node other.js\n",
			o:       cmd,
			wantErr: "3 workers.command: is also given after -- on the command line",
		},
		{
			name:    "a command with upstreams",
			src:     "upstreams:\n  servers: [127.0.0.1:1]\n",
			o:       cmd,
			wantErr: "1 upstreams: the worker command given after -- conflicts with upstreams",
		},
		{
			name:    "no command anywhere",
			src:     "workers:\n  count: 2\n",
			wantErr: "1 workers.command: must name the program to run (here, or after -- on the sluice serve command line)",
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l, err := config.ParseWith("s.yaml", []byte(tt.src), tt.o)
			if tt.wantErr != "" {
				list := config.List(err)
				if len(list) != 1 {
					t.Fatalf("got %v, want one error %q", err, tt.wantErr)
				}
				if got := fmt.Sprintf("%d %s: %s", list[0].Line, list[0].Path, list[0].Msg); !strings.HasPrefix(got, tt.wantErr) {
					t.Errorf("got %q, want it to start %q", got, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, l.Config.Workers)
		})
	}
}

func TestResolveWithCommandAndNoFile(t *testing.T) {
	t.Chdir(t.TempDir())
	l, err := config.ResolveWith("", config.Overrides{Command: []string{"node", "w.js"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Source != "" || l.Config.Workers == nil || strings.Join(l.Config.Workers.Command, " ") != "node w.js" || !l.Config.Workers.Concurrency.Auto() {
		t.Errorf("got source %q workers %+v, want the defaults with workers running node w.js", l.Source, l.Config.Workers)
	}
	if err := os.WriteFile(filepath.Join(".", config.DefaultFile), []byte("server:\n  backpressure: {maxLimit: 9}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err = config.ResolveWith("", config.Overrides{Command: []string{"w"}})
	if err != nil {
		t.Fatal(err)
	}
	if l.Source != config.DefaultFile || len(l.Warnings) != 1 || l.Warnings[0].Path != "server.backpressure.maxLimit" {
		t.Errorf("got source %q warnings %v, want ./sluice.yaml with a maxLimit warning", l.Source, l.Warnings)
	}
}
