package reqinfo_test

import (
	"context"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/reqinfo"
)

var (
	hex32  = regexp.MustCompile(`^[0-9a-f]{32}$`)
	tpForm = regexp.MustCompile(`^00-([0-9a-f]{32})-[0-9a-f]{16}-01$`)
)

func TestNewID(t *testing.T) {
	tests := []struct {
		name, in string
		kept     bool
	}{
		{"none: generated", "", false},
		{"given: kept", "abc-123", true},
		{"control byte: replaced", "abc\n123", false},
		{"space: replaced", "abc 123", false},
		{"too long: replaced", strings.Repeat("a", 129), false},
		{"longest kept", strings.Repeat("a", 128), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, i := reqinfo.New(context.Background(), time.Now(), tt.in, "", false)
			if tt.kept && i.ID != tt.in {
				t.Errorf("got ID %q, want %q", i.ID, tt.in)
			}
			if !tt.kept && !hex32.MatchString(i.ID) {
				t.Errorf("got ID %q, want 32 hex digits", i.ID)
			}
		})
	}
	_, a := reqinfo.New(context.Background(), time.Now(), "", "", false)
	_, b := reqinfo.New(context.Background(), time.Now(), "", "", false)
	if a.ID == b.ID {
		t.Errorf("two requests got the same ID %q", a.ID)
	}
}

func TestFrom(t *testing.T) {
	if reqinfo.From(context.Background()) != nil {
		t.Fatal("got an Info from a bare context")
	}
	type k struct{}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), k{}, "v"))
	ctx, i := reqinfo.New(parent, time.Now(), "", "", false)
	if reqinfo.From(ctx) != i {
		t.Error("From did not return New's Info")
	}
	if ctx.Value(k{}) != "v" {
		t.Error("the parent's values are lost")
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	cancel()
	<-child.Done() // cancellation passes through the Info's context
	if i.Worker != -1 {
		t.Errorf("got Worker %d before dispatch, want -1", i.Worker)
	}
}

func TestRequestHeaders(t *testing.T) {
	start := time.Date(2026, 12, 1, 18, 0, 0, 123456000, time.UTC)
	_, i := reqinfo.New(context.Background(), start, "id-1", "", false)
	h := http.Header{"X-Request-Id": {"forged"}, "X-Request-Start": {"t=1"}}
	i.SetRequestHeaders(h)
	if got := h.Get("X-Request-Id"); got != "id-1" {
		t.Errorf("got X-Request-Id %q, want id-1", got)
	}
	want := "t=" + strconv.FormatInt(start.UnixMicro(), 10)
	if got := h.Get("X-Request-Start"); got != want || len(got) != 18 {
		t.Errorf("got X-Request-Start %q, want %q", got, want)
	}
	if _, ok := h["Traceparent"]; ok {
		t.Error("a traceparent was set without generate")
	}
	resp := http.Header{}
	i.SetResponseHeader(resp)
	if got := resp.Get("X-Request-Id"); got != "id-1" {
		t.Errorf("got response X-Request-Id %q, want id-1", got)
	}
}

func TestTraceparent(t *testing.T) {
	const given = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	t.Run("received: its trace id, nothing generated", func(t *testing.T) {
		_, i := reqinfo.New(context.Background(), time.Now(), "", given, true)
		if i.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || i.Traceparent() != "" {
			t.Errorf("got trace id %q, generated %q; want the received one, none", i.TraceID, i.Traceparent())
		}
	})
	t.Run("absent, generate off: none", func(t *testing.T) {
		_, i := reqinfo.New(context.Background(), time.Now(), "", "", false)
		if i.TraceID != "" || i.Traceparent() != "" {
			t.Errorf("got %q, %q; want none", i.TraceID, i.Traceparent())
		}
	})
	t.Run("absent, generate on: trace id is the request ID", func(t *testing.T) {
		_, i := reqinfo.New(context.Background(), time.Now(), "", "", true)
		m := tpForm.FindStringSubmatch(i.Traceparent())
		if m == nil || m[1] != i.ID || i.TraceID != i.ID {
			t.Fatalf("got traceparent %q, trace id %q, ID %q; want 00-<ID>-<span>-01", i.Traceparent(), i.TraceID, i.ID)
		}
		h := http.Header{}
		i.SetRequestHeaders(h)
		if h.Get("Traceparent") != i.Traceparent() {
			t.Errorf("got header %q, want %q", h.Get("Traceparent"), i.Traceparent())
		}
	})
	t.Run("invalid, trusted ID not hex: a fresh trace id", func(t *testing.T) {
		_, i := reqinfo.New(context.Background(), time.Now(), "req-7", "00-zz", true)
		m := tpForm.FindStringSubmatch(i.Traceparent())
		if m == nil || m[1] != i.TraceID {
			t.Fatalf("got traceparent %q, trace id %q", i.Traceparent(), i.TraceID)
		}
	})
}

func TestTraceID(t *testing.T) {
	tests := []struct {
		tp   string
		want string
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-future", "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-x", ""},
		{"ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", ""},
		{"00-00000000000000000000000000000000-00f067aa0ba902b7-01", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01", ""},
		{"00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01", ""},
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, ok := reqinfo.TraceID(tt.tp)
		if got != tt.want || ok != (tt.want != "") {
			t.Errorf("TraceID(%q) = %q, %v; want %q", tt.tp, got, ok, tt.want)
		}
	}
}

func TestServerTiming(t *testing.T) {
	_, i := reqinfo.New(context.Background(), time.Now(), "", "", false)
	i.QueueWait = 1250 * time.Microsecond
	if got, want := string(i.AppendServerTiming(nil)), "queue;dur=1.2"; got != want && got != "queue;dur=1.3" {
		t.Errorf("got %q, want %q", got, want)
	}
	i.Worker, i.WorkerTime = 2, 35*time.Millisecond
	if got, want := string(i.AppendServerTiming(nil)), "queue;dur=1.2, worker;dur=35.0"; got != want && got != "queue;dur=1.3, worker;dur=35.0" {
		t.Errorf("got %q, want %q", got, want)
	}
}

func BenchmarkNew(b *testing.B) {
	ctx := context.Background()
	now := time.Now()
	h := http.Header{}
	b.ReportAllocs()
	for b.Loop() {
		_, i := reqinfo.New(ctx, now, "", "", true)
		i.SetRequestHeaders(h)
	}
}

// A tracing front sends the worker its own span as the parent, in place of
// the client's traceparent.
func TestSetTraceparent(t *testing.T) {
	const client = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	const own = "00-4bf92f3577b34da6a3ce929d0e0e4736-b7ad6b7169203331-01"
	_, i := reqinfo.New(context.Background(), time.Now(), "", client, false)
	if i.SetTraceparent("00-zz") || i.Traceparent() != "" {
		t.Fatalf("an invalid traceparent was taken: %q", i.Traceparent())
	}
	if !i.SetTraceparent(own) {
		t.Fatal("a valid traceparent was refused")
	}
	h := http.Header{"Traceparent": {client}}
	i.SetRequestHeaders(h)
	if got := h.Get("Traceparent"); got != own || i.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("worker gets traceparent %q, trace id %q; want %q and its trace id", got, i.TraceID, own)
	}
	_, j := reqinfo.New(context.Background(), time.Now(), "", "", false)
	j.SetTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00")
	if j.TraceID != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("got trace id %q, want the set traceparent's", j.TraceID)
	}
}

// An Info made before trust was known takes the trusted peer's ID later,
// on the response header already set too.
func TestSetID(t *testing.T) {
	_, i := reqinfo.New(context.Background(), time.Now(), "", "", false)
	resp := http.Header{}
	i.SetResponseHeader(resp)
	generated := i.ID
	for _, bad := range []string{"", "a b", strings.Repeat("a", 129)} {
		if i.SetID(bad) || i.ID != generated {
			t.Errorf("SetID(%q) took it: ID %q", bad, i.ID)
		}
	}
	if !i.SetID("req-7") || i.ID != "req-7" {
		t.Fatalf("got ID %q, want req-7", i.ID)
	}
	h := http.Header{}
	i.SetRequestHeaders(h)
	if h.Get("X-Request-Id") != "req-7" || resp.Get("X-Request-Id") != "req-7" {
		t.Errorf("worker got %q, client gets %q; want req-7 both", h.Get("X-Request-Id"), resp.Get("X-Request-Id"))
	}
}
