package loadgen_test

import (
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

func TestValidate(t *testing.T) {
	ok := func() loadgen.Config {
		return loadgen.Config{URL: "http://127.0.0.1:3000/", Phases: []loadgen.Phase{{Rate: 10, Duration: time.Second}}}
	}
	tests := []struct {
		name      string
		mutate    func(*loadgen.Config)
		wantField string // "" for valid
	}{
		{"minimal", func(*loadgen.Config) {}, ""},
		{"every option", func(c *loadgen.Config) {
			c.Retry, c.MaxAttempts, c.Timeout, c.MaxOutstanding = loadgen.RetryBackoff, 5, time.Second, 10
			c.HeaderMixes = []loadgen.HeaderMix{{Name: "Sluice-Tenant", Values: []loadgen.Weighted{{Value: "a", Weight: 1}}}}
			c.QueryMix = []loadgen.Weighted{{Value: "cpu=5", Weight: 1}}
			c.Method, c.Body, c.Header = "POST", []byte("x"), http.Header{"A": {"b"}}
		}, ""},
		{"no URL", func(c *loadgen.Config) { c.URL = "" }, "URL"},
		{"URL scheme", func(c *loadgen.Config) { c.URL = "ftp://127.0.0.1/" }, "URL"},
		{"URL without host", func(c *loadgen.Config) { c.URL = "http:///x" }, "URL"},
		{"no phases", func(c *loadgen.Config) { c.Phases = nil }, "Phases"},
		{"zero duration", func(c *loadgen.Config) { c.Phases[0].Duration = 0 }, "Phases[0]"},
		{"negative rate", func(c *loadgen.Config) { c.Phases[0].Rate = -1 }, "Phases[0]"},
		{"NaN rate", func(c *loadgen.Config) { c.Phases[0].Rate = math.NaN() }, "Phases[0]"},
		{"infinite ramp", func(c *loadgen.Config) { c.Phases[0].RampTo = math.Inf(1) }, "Phases[0]"},
		{"negative timeout", func(c *loadgen.Config) { c.Timeout = -time.Second }, "Timeout"},
		{"negative cap", func(c *loadgen.Config) { c.MaxOutstanding = -1 }, "MaxOutstanding"},
		{"attempts without retry", func(c *loadgen.Config) { c.MaxAttempts = 3 }, "MaxAttempts"},
		{"unknown retry mode", func(c *loadgen.Config) { c.Retry = 9 }, "Retry"},
		{"negative bucket", func(c *loadgen.Config) { c.Bucket = -1 }, "Bucket"},
		{"loopback on a custom transport", func(c *loadgen.Config) {
			c.LoopbackOnly, c.Transport = true, http.DefaultTransport
		}, "LoopbackOnly"},
		{"empty header mix", func(c *loadgen.Config) { c.HeaderMixes = []loadgen.HeaderMix{{Name: "X"}} }, "HeaderMixes[0]"},
		{"unnamed header mix", func(c *loadgen.Config) {
			c.HeaderMixes = []loadgen.HeaderMix{{Values: []loadgen.Weighted{{Value: "a", Weight: 1}}}}
		}, "HeaderMixes[0]"},
		{"zero weights", func(c *loadgen.Config) { c.QueryMix = []loadgen.Weighted{{Value: "a=1", Weight: 0}} }, "QueryMix"},
		{"bad query", func(c *loadgen.Config) { c.QueryMix = []loadgen.Weighted{{Value: "a=%zz", Weight: 1}} }, "QueryMix"},
		{"bad method", func(c *loadgen.Config) { c.Method = "GET /" }, "Method"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok()
			tt.mutate(&c)
			err := c.Validate()
			if tt.wantField == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, loadgen.ErrConfig) || !strings.Contains(err.Error(), ": "+tt.wantField+": ") {
				t.Errorf("Validate() = %v, want an ErrConfig naming %s", err, tt.wantField)
			}
			if _, runErr := loadgen.Run(t.Context(), c); !errors.Is(runErr, loadgen.ErrConfig) {
				t.Errorf("Run() = %v, want the validation error", runErr)
			}
		})
	}
}

func TestParsePhases(t *testing.T) {
	tests := []struct {
		in      string
		want    []loadgen.Phase
		wantErr string
	}{
		{"100:10s", []loadgen.Phase{{Rate: 100, Duration: 10 * time.Second}}, ""},
		{"100:10s, 200:500ms,0:1s", []loadgen.Phase{
			{Rate: 100, Duration: 10 * time.Second}, {Rate: 200, Duration: 500 * time.Millisecond}, {Rate: 0, Duration: time.Second},
		}, ""},
		{"100->800:30s", []loadgen.Phase{{Rate: 100, RampTo: 800, Duration: 30 * time.Second}}, ""},
		{"12.5->0.5:1m", []loadgen.Phase{{Rate: 12.5, RampTo: 0.5, Duration: time.Minute}}, ""},
		{"", nil, "empty"},
		{"100", nil, "want RATE:DURATION"},
		{"100:10", nil, "duration"},
		{"100:-1s", nil, "duration"},
		{"fast:1s", nil, "rate"},
		{"-5:1s", nil, "rate"},
		{"100->:1s", nil, "rate"},
		{"100->0:1s", nil, "must end above 0"},
		{"100:1s,", nil, "want RATE:DURATION"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := loadgen.ParsePhases(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePhases(%q) error = %v, want one containing %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParsePhases(%q): %v", tt.in, err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParsePhases(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("ParsePhases(%q)[%d] = %+v, want %+v", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseWeights(t *testing.T) {
	tests := []struct {
		in      string
		sep     byte
		want    []loadgen.Weighted
		wantErr bool
	}{
		{"a=90,b=10", '=', []loadgen.Weighted{{Value: "a", Weight: 90}, {Value: "b", Weight: 10}}, false},
		{"a,b", '=', []loadgen.Weighted{{Value: "a", Weight: 1}, {Value: "b", Weight: 1}}, false},
		{"cpu=5:90, cpu=50:10", ':', []loadgen.Weighted{{Value: "cpu=5", Weight: 90}, {Value: "cpu=50", Weight: 10}}, false},
		{"cpu=5", ':', []loadgen.Weighted{{Value: "cpu=5", Weight: 1}}, false},
		{"", '=', nil, true},
		{"a=x", '=', nil, true},
		{"a=-1", '=', nil, true},
		{"=5", '=', nil, true},
		{"a=0,b=0", '=', nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := loadgen.ParseWeights(tt.in, tt.sep)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseWeights(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("ParseWeights(%q) = %v, want %v", tt.in, got, tt.want)
			}
			for i := range got {
				if got[i] != tt.want[i] {
					t.Errorf("ParseWeights(%q)[%d] = %v, want %v", tt.in, i, got[i], tt.want[i])
				}
			}
		})
	}
}

func TestParseRetryMode(t *testing.T) {
	for _, m := range []loadgen.RetryMode{loadgen.RetryNone, loadgen.RetryImmediate, loadgen.RetryBackoff, loadgen.RetryRetryAfter} {
		got, err := loadgen.ParseRetryMode(m.String())
		if err != nil || got != m {
			t.Errorf("ParseRetryMode(%q) = %v, %v; want %v", m.String(), got, err, m)
		}
	}
	if _, err := loadgen.ParseRetryMode("eventually"); err == nil {
		t.Error(`ParseRetryMode("eventually") succeeded, want an error`)
	}
}
