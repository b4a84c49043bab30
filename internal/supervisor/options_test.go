package supervisor

import (
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	cmd := []string{"node", "server.js"}
	tests := []struct {
		name string
		o    Options
		want string // substring of the error; empty for none
	}{
		{"defaults", Options{Command: cmd}, ""},
		{"no command", Options{}, "Command is empty"},
		{"negative count", Options{Command: cmd, Count: -1}, "Count is -1"},
		{"negative concurrency", Options{Command: cmd, Concurrency: -2}, "Concurrency is -2"},
		{"bad env", Options{Command: cmd, Env: []string{"NODE_ENV"}}, `Env entry "NODE_ENV"`},
		{"bad mode", Options{Command: cmd, AddressMode: "pipe"}, `AddressMode is "pipe"`},
		{"bad roll", Options{Command: cmd, Roll: "blue-green"}, `Roll is "blue-green"`},
		{"relative ready path", Options{Command: cmd, ReadyPath: "ready"}, "ReadyPath"},
		{"relative warm-up path", Options{Command: cmd, WarmupPath: "warm"}, "WarmupPath"},
		{"negative warm-up", Options{Command: cmd, WarmupRequests: -1}, "WarmupRequests is -1"},
		{"negative timeout", Options{Command: cmd, StopTimeout: -time.Second}, "StopTimeout is -1s"},
		{"backoff upside down", Options{Command: cmd, BackoffMin: time.Minute}, "BackoffMin 1m0s is above BackoffMax 30s"},
		{"jitter above 1", Options{Command: cmd, BackoffJitter: 1.5}, "BackoffJitter is 1.5"},
		{"crash-loop guard off", Options{Command: cmd, CrashLoopExits: -1}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("Validate: got %v, want nil", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Errorf("Validate: got %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

// Every wrong field is reported at once, each by name, so that a caller
// fixes them in one pass.
func TestValidateReportsEveryField(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		fields []string
	}{
		{"Options", Options{
			Count: -1, Concurrency: -1, Env: []string{"X"}, AddressMode: "pipe", ReadyPath: "r", WarmupPath: "w",
			WarmupRequests: -1, ReadyInterval: -1, StartTimeout: -1, BackoffMin: time.Hour, BackoffMax: -1,
			StableAfter: -1, CrashLoopWindow: -1, StopTimeout: -1, BackoffJitter: 2,
		}.Validate(), []string{"Command", "Count", "Concurrency", "Env", "AddressMode", "ReadyPath", "WarmupPath",
			"WarmupRequests", "ReadyInterval", "StartTimeout", "BackoffMax", "StableAfter", "CrashLoopWindow",
			"StopTimeout", "BackoffMin", "BackoffJitter"}},
		{"StaticOptions", StaticOptions{
			Upstreams:  []Endpoint{{ID: 1, Network: "udp", Concurrency: -1}, {ID: 1, Addr: "b"}},
			HealthPath: "h", Interval: -1, Timeout: -1, Fails: -1, Passes: -1,
		}.Validate(), []string{"Upstreams[0]: Network", "Upstreams[0]: Addr", "Upstreams[0]: Concurrency",
			"Upstreams[1]: ID", "HealthPath", "Interval", "Timeout", "Fails", "Passes"}},
		{"Command", Command{Env: []string{"X", "=y"}}.Validate(), []string{"Command", `Env entry "X"`, `Env entry "=y"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var joined interface{ Unwrap() []error }
			if !errors.As(tc.err, &joined) || len(joined.Unwrap()) != len(tc.fields) {
				t.Fatalf("got %v, want %d joined errors", tc.err, len(tc.fields))
			}
			for i, e := range joined.Unwrap() {
				if want := "supervisor: " + tc.fields[i]; !strings.HasPrefix(e.Error(), want) {
					t.Errorf("error %d: got %q, want it to begin %q", i, e, want)
				}
			}
		})
	}
	// The zero value of every field but the required ones is valid.
	if err := (StaticOptions{Upstreams: []Endpoint{{Addr: "127.0.0.1:1"}}}).Validate(); err != nil {
		t.Errorf("StaticOptions with one address: got %v, want valid", err)
	}
}

func TestOptionsDefaults(t *testing.T) {
	o := Options{Command: []string{"x"}}.withDefaults()
	if o.Count != runtime.NumCPU() || o.Concurrency != 1 || o.AddressMode != PortMode {
		t.Errorf("got Count %d Concurrency %d AddressMode %q, want %d 1 port", o.Count, o.Concurrency, o.AddressMode, runtime.NumCPU())
	}
	if o.CrashLoopExits != 5*runtime.NumCPU() || o.CrashLoopWindow != time.Minute {
		t.Errorf("crash-loop guard: got %d in %v, want %d in 1m", o.CrashLoopExits, o.CrashLoopWindow, 5*runtime.NumCPU())
	}
	if o.StartTimeout != 30*time.Second || o.StopTimeout != 10*time.Second || o.BackoffMin != 100*time.Millisecond || o.BackoffMax != 30*time.Second {
		t.Errorf("timeouts: got start %v stop %v backoff %v..%v, want 30s 10s 100ms..30s", o.StartTimeout, o.StopTimeout, o.BackoffMin, o.BackoffMax)
	}
	if o.Logger == nil {
		t.Errorf("Logger: got nil, want a discarding logger")
	}
	if o := (Options{Command: []string{"x"}, Count: 3}).withDefaults(); o.CrashLoopExits != 15 {
		t.Errorf("CrashLoopExits for Count 3: got %d, want 15", o.CrashLoopExits)
	}
}
