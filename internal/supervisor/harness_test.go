package supervisor

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
)

// harness runs a Supervisor over fakes. Create it inside synctest.Test.
type harness struct {
	t      *testing.T
	rec    *recorder
	env    *fakeEnv
	bal    *fakeBalancer
	logs   *logCapture
	sup    *Supervisor
	cancel context.CancelFunc
	runErr chan error
}

// startHarness starts Run with o (Command defaults to a dummy) after
// setup has configured the fake env, and waits until everything has
// settled. The harness stops the supervisor at the end of the test.
func startHarness(t *testing.T, o Options, setup func(*fakeEnv)) *harness {
	t.Helper()
	h := newHarness(t, o, setup)
	h.run()
	return h
}

func newHarness(t *testing.T, o Options, setup func(*fakeEnv)) *harness {
	t.Helper()
	rec := &recorder{}
	h := &harness{t: t, rec: rec, env: newFakeEnv(rec), bal: newFakeBalancer(rec), logs: &logCapture{}}
	if setup != nil {
		setup(h.env)
	}
	if o.Command == nil {
		o.Command = []string{"worker"}
	}
	o.Logger = slog.New(h.logs)
	sup, err := newSupervisor(h.bal, o, h.env.env())
	if err != nil {
		t.Fatalf("newSupervisor: %v", err)
	}
	h.sup = sup
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.runErr = make(chan error, 1)
	go func() { h.runErr <- h.sup.Run(ctx) }()
	h.t.Cleanup(h.stop)
	synctest.Wait()
}

// stop cancels Run and waits for it; it is idempotent.
func (h *harness) stop() {
	h.cancel()
	if err, ok := <-h.runErr; ok {
		if err != nil && err != ErrStopped {
			h.t.Errorf("Run: got %v, want nil", err)
		}
		close(h.runErr)
	}
}

// current returns the ID of the most recently started worker of slot.
func (h *harness) current(slot int) int {
	id := 0
	for _, s := range h.env.startTimes() {
		if s.slot == slot {
			id = s.id
		}
	}
	return id
}

func (h *harness) wantEvents(want ...string) {
	h.t.Helper()
	got := h.rec.take()
	if !slices.Equal(got, want) {
		h.t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
}

// logCapture is a slog.Handler that keeps every record.
type logCapture struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *logCapture) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCapture) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *logCapture) WithGroup(string) slog.Handler            { return l }

func (l *logCapture) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.recs = append(l.recs, r.Clone())
	return nil
}

// count returns how many records at level have a message containing substr.
func (l *logCapture) count(level slog.Level, substr string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if r.Level == level && strings.Contains(r.Message, substr) {
			n++
		}
	}
	return n
}

// attrs returns the value of attribute key in each record at level whose
// message contains substr.
func (l *logCapture) attrs(level slog.Level, substr, key string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var vals []string
	for _, r := range l.recs {
		if r.Level != level || !strings.Contains(r.Message, substr) {
			continue
		}
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == key {
				vals = append(vals, a.Value.String())
			}
			return true
		})
	}
	return vals
}
