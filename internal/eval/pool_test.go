package eval

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/demo"
)

// fakeStats serves demo.StatsPath from a script of answers; the last one
// repeats.
type fakeStats struct {
	mu     sync.Mutex
	script []demo.Stats
	calls  int
}

func (f *fakeStats) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != demo.StatsPath {
		http.NotFound(w, r)
		return
	}
	f.mu.Lock()
	s := f.script[min(f.calls, len(f.script)-1)]
	f.calls++
	f.mu.Unlock()
	fmt.Fprintf(w, `{"rendered":%d,"inflight":%d,"peakInflight":%d}`, s.Rendered, s.Inflight, s.PeakInflight)
}

func poolOf(t *testing.T, handlers ...http.Handler) *Pool {
	t.Helper()
	p := &Pool{client: newClient(5 * time.Second)}
	for _, h := range handlers {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close)
		p.Addrs = append(p.Addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	return p
}

func TestPoolStatsSumsProcesses(t *testing.T) {
	p := poolOf(t,
		&fakeStats{script: []demo.Stats{{Rendered: 10, Inflight: 1, PeakInflight: 3}}},
		&fakeStats{script: []demo.Stats{{Rendered: 5, Inflight: 2, PeakInflight: 1}}},
	)
	got, err := p.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := (demo.Stats{Rendered: 15, Inflight: 3, PeakInflight: 3}); got != want {
		t.Errorf("got %+v, want %+v", got, want)
	}
}

func TestPoolWaitIdle(t *testing.T) {
	tests := []struct {
		name      string
		script    []demo.Stats
		wantErr   bool
		wantFinal int64
	}{
		{
			"idle once nothing is in flight and the count stops moving",
			[]demo.Stats{{Rendered: 1, Inflight: 2}, {Rendered: 5, Inflight: 0}, {Rendered: 7, Inflight: 0}, {Rendered: 7, Inflight: 0}},
			false, 7,
		},
		{
			"never idle",
			[]demo.Stats{{Rendered: 1, Inflight: 1}},
			true, 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStats{script: tt.script}
			p := poolOf(t, f)
			got, _, err := p.WaitIdle(context.Background(), time.Millisecond, 500*time.Millisecond)
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("got error %v, want error: %v", err, tt.wantErr)
			}
			if tt.wantErr && !errors.Is(err, ErrStillBusy) {
				t.Errorf("got %v, want an error wrapping ErrStillBusy", err)
			}
			if got.Rendered != tt.wantFinal {
				t.Errorf("got rendered %d, want %d", got.Rendered, tt.wantFinal)
			}
		})
	}
}

func TestPoolStatsErrors(t *testing.T) {
	broken := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("not json")) })
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusInternalServerError) })
	for name, h := range map[string]http.Handler{"bad JSON": broken, "bad status": failing} {
		t.Run(name, func(t *testing.T) {
			if _, err := poolOf(t, h).Stats(context.Background()); err == nil {
				t.Error("got no error, want one")
			}
		})
	}
}
