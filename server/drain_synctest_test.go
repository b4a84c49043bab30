package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/server"
)

// pipeClient returns a client of l.
func pipeClient(t *testing.T, l *testutil.Listener) *http.Client {
	tr := &http.Transport{DialContext: l.Dial}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr}
}

// pipeGet returns the status and body of GET path, or the error.
func pipeGet(c *http.Client, path string) (int, string, *http.Response, error) {
	resp, err := c.Get("http://sluice" + path)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp, err
}

// The drain's sequence with the default timings, on the bubble's clock.
func TestDrainSequence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := testutil.NewListener()
		entered, release := make(chan struct{}, 1), make(chan struct{})
		var drains int
		s := &server.Server{Handler: slowHandler(entered, release), OnDrain: func() { drains++ }}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, l) }()
		c := pipeClient(t, l)

		type result struct {
			status int
			body   string
			close  bool
			err    error
		}
		slow := make(chan result, 1)
		go func() {
			status, body, resp, err := pipeGet(c, "/slow")
			slow <- result{status, body, resp != nil && resp.Close, err}
		}()
		<-entered

		began := time.Now()
		cancel()
		synctest.Wait()
		if drains != 1 {
			t.Fatalf("OnDrain calls: got %d, want 1", drains)
		}
		check := func(path string, wantStatus int, wantBody string) {
			t.Helper()
			status, body, _, err := pipeGet(c, path)
			if err != nil || status != wantStatus || body != wantBody {
				t.Errorf("%v into the drain, GET %s: got %d %q (%v), want %d %q", time.Since(began), path, status, body, err, wantStatus, wantBody)
			}
		}
		check(server.DefaultReadyPath, 503, "not ready")
		check(server.DefaultHealthPath, 200, "ok")
		check("/new", 200, "fast")

		time.Sleep(server.DefaultDrainDelay - time.Nanosecond)
		check("/new", 200, "fast")
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if _, _, _, err := pipeGet(c, "/new"); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("%v into the drain: got %v, want the connection refused", time.Since(began), err)
		}

		time.Sleep(10 * time.Second) // the in-flight request takes its time
		close(release)
		res := <-slow
		if res.err != nil || res.status != 200 || res.body != "slow done" || !res.close {
			t.Errorf("in-flight request: got %d %q (Connection: close %v, %v), want 200 %q with Connection: close", res.status, res.body, res.close, res.err, "slow done")
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: got %v, want nil", err)
		}
		if took, limit := time.Since(began), server.DefaultShutdownTimeout; took >= limit {
			t.Errorf("drain took %v, want less than %v", took, limit)
		}
		if drains != 1 {
			t.Errorf("OnDrain calls: got %d, want 1", drains)
		}
	})
}

// Whatever is left at ShutdownTimeout, measured from the drain's start, is
// cut, and so is everything when Cut is called (the second signal).
func TestDrainCut(t *testing.T) {
	tests := []struct {
		name            string
		drainDelay      time.Duration
		shutdownTimeout time.Duration
		cutAfter        time.Duration // call Cut this long into the drain; 0: never
		cutFirst        bool          // call Cut instead of starting the drain
		wantAt          time.Duration
		wantDrain       bool // OnDrain called
	}{
		{name: "defaults", wantAt: server.DefaultShutdownTimeout, wantDrain: true},
		{name: "shutdown timeout within the drain delay", drainDelay: 10 * time.Second, shutdownTimeout: 3 * time.Second, wantAt: 3 * time.Second, wantDrain: true},
		{name: "no drain delay", drainDelay: -1, shutdownTimeout: 2 * time.Second, wantAt: 2 * time.Second, wantDrain: true},
		{name: "cut after the drain delay", cutAfter: 7 * time.Second, wantAt: 7 * time.Second, wantDrain: true},
		{name: "cut within the drain delay", cutAfter: 2 * time.Second, wantAt: 2 * time.Second, wantDrain: true},
		{name: "no shutdown timeout waits for Cut", shutdownTimeout: -1, cutAfter: time.Hour, wantAt: time.Hour, wantDrain: true},
		{name: "cut before any drain", cutFirst: true, wantAt: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := testutil.NewListener()
				entered, handlerDone := make(chan struct{}, 1), make(chan struct{})
				var drains, cuts int
				var cutSawHandlerRunning bool
				s := &server.Server{
					Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						defer close(handlerDone)
						entered <- struct{}{}
						<-r.Context().Done()
					}),
					DrainDelay:      tc.drainDelay,
					ShutdownTimeout: tc.shutdownTimeout,
					OnDrain:         func() { drains++ },
				}
				s.OnCut = func() {
					cuts++
					select {
					case <-handlerDone:
					default:
						cutSawHandlerRunning = true
					}
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				done := make(chan error, 1)
				go func() { done <- s.Serve(ctx, l) }()
				clientErr := make(chan error, 1)
				go func() {
					_, _, _, err := pipeGet(pipeClient(t, l), "/stuck")
					clientErr <- err
				}()
				<-entered

				began := time.Now()
				if tc.cutFirst {
					s.Cut()
				} else {
					cancel()
				}
				if tc.cutAfter > 0 {
					time.Sleep(tc.cutAfter)
					s.Cut()
				}
				err := <-done
				if took := time.Since(began); !errors.Is(err, server.ErrCut) || took != tc.wantAt {
					t.Errorf("Serve: got %v after %v, want ErrCut after %v", err, took, tc.wantAt)
				}
				if (drains == 1) != tc.wantDrain || cuts != 1 || !cutSawHandlerRunning {
					t.Errorf("got %d OnDrain, %d OnCut (handler running at OnCut: %v); want OnDrain %v, one OnCut with the handler running",
						drains, cuts, cutSawHandlerRunning, tc.wantDrain)
				}
				<-handlerDone
				if err := <-clientErr; err == nil {
					t.Error("client: got a response, want the connection cut")
				}
				s.Cut() // again: no effect, no panic
			})
		})
	}
}

// With nothing in flight the drain ends when the delay does.
func TestDrainIdle(t *testing.T) {
	tests := []struct {
		drainDelay time.Duration
		want       time.Duration
	}{
		{0, server.DefaultDrainDelay},
		{-1, 0},
		{1500 * time.Millisecond, 1500 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.drainDelay.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := testutil.NewListener()
				s := &server.Server{DrainDelay: tc.drainDelay}
				ctx, cancel := context.WithCancel(t.Context())
				done := make(chan error, 1)
				go func() { done <- s.Serve(ctx, l) }()
				if status, _, _, err := pipeGet(pipeClient(t, l), "/"); err != nil || status != 404 {
					t.Fatalf("nil Handler: got %d (%v), want 404", status, err)
				}
				synctest.Wait() // the connection is idle
				began := time.Now()
				cancel()
				err := <-done
				if took := time.Since(began); err != nil || took != tc.want {
					t.Errorf("Serve: got %v after %v, want nil after %v", err, took, tc.want)
				}
			})
		})
	}
}

func TestServeTwice(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := &server.Server{DrainDelay: -1}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- s.Serve(ctx, testutil.NewListener()) }()
		synctest.Wait()
		l2 := testutil.NewListener()
		if err := s.Serve(ctx, l2); err == nil {
			t.Error("second Serve: got nil, want an error")
		}
		if !l2.Closed() {
			t.Error("second Serve left its listener open")
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("first Serve: got %v, want nil", err)
		}
	})
}
