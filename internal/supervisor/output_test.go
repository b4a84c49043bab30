//go:build unix

package supervisor

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// lineRecorder keeps each Write as one element.
type lineRecorder struct{ writes []string }

func (l *lineRecorder) Write(p []byte) (int, error) {
	l.writes = append(l.writes, string(p))
	return len(p), nil
}

func TestCopyLines(t *testing.T) {
	long := strings.Repeat("x", 64<<10)
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"lines", "a\nbc\n", []string{"a\n", "bc\n"}},
		{"last line unterminated", "a\nb", []string{"a\n", "b\n"}},
		{"empty lines kept", "\n\n", []string{"\n", "\n"}},
		{"nothing", "", nil},
		{"line longer than the buffer", long + "yz\n", []string{long + "\n", "yz\n"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec lineRecorder
			copyLines(&rec, strings.NewReader(tt.in))
			if len(rec.writes) != len(tt.want) {
				t.Fatalf("got %d writes, want %d", len(rec.writes), len(tt.want))
			}
			for i := range tt.want {
				if rec.writes[i] != tt.want[i] {
					t.Errorf("write %d: got %.20q (len %d), want %.20q (len %d)", i, rec.writes[i], len(rec.writes[i]), tt.want[i], len(tt.want[i]))
				}
			}
		})
	}
}

func TestOutputPrefixesLines(t *testing.T) {
	var buf bytes.Buffer
	o := &output{w: &buf}
	o.stream(7, "stdout").Write([]byte("listening\n"))
	o.stream(12, "stderr").Write([]byte("warning: cold cache\n"))
	if got, want := buf.String(), "worker 7: listening\nworker 12: warning: cold cache\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestOutputToLogger(t *testing.T) {
	logs := &logCapture{}
	o := &output{log: slog.New(logs)}
	o.stream(3, "stderr").Write([]byte("boom\r\n"))
	if len(logs.recs) != 1 {
		t.Fatalf("got %d records, want 1", len(logs.recs))
	}
	r := logs.recs[0]
	attrs := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	if r.Message != "boom" || r.Level != slog.LevelInfo || attrs["worker"] != "3" || attrs["stream"] != "stderr" {
		t.Errorf("got %v %q %v, want INFO \"boom\" worker=3 stream=stderr", r.Level, r.Message, attrs)
	}
}
