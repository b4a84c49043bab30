package supervisor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

// runStatic starts a Static over a fake env inside a synctest bubble and
// stops it when the test ends.
func runStatic(t *testing.T, o StaticOptions, setup func(*fakeEnv)) (*Static, *fakeEnv, *fakeBalancer) {
	t.Helper()
	rec := &recorder{}
	fe, fb := newFakeEnv(rec), newFakeBalancer(rec)
	if setup != nil {
		setup(fe)
	}
	st, err := newStatic(fb, o, fe.env())
	if err != nil {
		t.Fatalf("newStatic: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	synctest.Wait()
	return st, fe, fb
}

func twoUpstreams() []Endpoint {
	return []Endpoint{{Addr: "10.0.0.1:80"}, {Addr: "10.0.0.2:80"}}
}

func TestStaticFailsAndPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, fe, fb := runStatic(t, StaticOptions{Upstreams: twoUpstreams(), Interval: time.Second, Fails: 3, Passes: 2}, nil)
		if got := sorted(fb.rec.take()); len(got) != 2 || got[0] != "add 1" || got[1] != "add 2" {
			t.Fatalf("first checks pass: got %q, want add 1 and add 2", got)
		}
		if !st.Ready() {
			t.Fatalf("Ready: got false, want true")
		}
		fe.setReady(1, false)
		step := func(want ...string) {
			t.Helper()
			time.Sleep(time.Second)
			synctest.Wait()
			if got := fb.rec.take(); strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("at %v: got %q, want %q", time.Now().Format("05s"), got, want)
			}
		}
		step()           // 1 failure
		step()           // 2 failures
		step("remove 1") // Fails = 3
		step()
		fe.setReady(1, true)
		step()        // 1 pass
		step("add 1") // Passes = 2
		if e, _ := fb.endpoint(1); e.Network != "tcp" || e.Concurrency != 1 || e.Addr != "10.0.0.1:80" {
			t.Errorf("endpoint 1: got %+v, want defaults tcp and concurrency 1", e)
		}
		up := st.Stats().Upstreams
		if len(up) != 2 || !up[0].Up || up[0].Passes != 2 || up[0].LastError != "" {
			t.Errorf("Stats: got %+v, want upstream 1 up after 2 passes", up)
		}
	})
}

func TestStaticStartsDownUntilPasses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, fe, fb := runStatic(t, StaticOptions{Upstreams: twoUpstreams()[:1], Interval: time.Second, Passes: 3},
			func(f *fakeEnv) { f.notReady[1] = true })
		if st.Ready() {
			t.Fatalf("Ready with the only upstream failing: got true, want false")
		}
		if got := st.Stats().Upstreams[0].LastError; got == "" {
			t.Errorf("LastError: got empty, want the check's error")
		}
		fe.setReady(1, true)
		for range 2 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		if got := fb.rec.take(); len(got) != 0 {
			t.Fatalf("after 2 passes: got %q, want nothing (Passes is 3 once the first check failed)", got)
		}
		time.Sleep(time.Second)
		synctest.Wait()
		if got := fb.rec.take(); strings.Join(got, ",") != "add 1" {
			t.Fatalf("after 3 passes: got %q, want add 1", got)
		}
	})
}

func TestStaticShutdownDrainsUpUpstreams(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _, fb := runStatic(t, StaticOptions{Upstreams: append(twoUpstreams(), Endpoint{Addr: "10.0.0.3:80"})},
			func(f *fakeEnv) { f.notReady[3] = true })
		fb.rec.take()
		fb.hold = true
		done := make(chan error, 1)
		go func() { done <- st.Shutdown(context.Background()) }()
		synctest.Wait()
		if st.Ready() {
			t.Errorf("Ready during Shutdown: got true, want false")
		}
		if got := sorted(fb.rec.take()); strings.Join(got, ",") != "drain 1,drain 2" {
			t.Fatalf("Shutdown: got %q, want drain 1 and drain 2 (3 is down)", got)
		}
		fb.release(1)
		fb.release(2)
		if err := <-done; err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		want := "drained 1,drained 2,remove 1,remove 2"
		if got := sorted(fb.rec.take()); strings.Join(got, ",") != want {
			t.Fatalf("after the drains: got %q, want %s", got, want)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := fb.rec.take(); len(got) != 0 {
			t.Errorf("checks after Shutdown: got %q, want none", got)
		}
	})
}

func TestStaticShutdownDrainTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, _, fb := runStatic(t, StaticOptions{Upstreams: twoUpstreams()[:1]}, nil)
		fb.hold = true
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := st.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: got %v, want context.DeadlineExceeded", err)
		}
	})
}

func TestStaticOptionsValidate(t *testing.T) {
	tests := []struct {
		name string
		o    StaticOptions
		want string // substring of the error; empty for none
	}{
		{"defaults", StaticOptions{Upstreams: twoUpstreams()}, ""},
		{"no upstreams", StaticOptions{}, "Upstreams is empty"},
		{"duplicate IDs", StaticOptions{Upstreams: []Endpoint{{ID: 2, Addr: "a:1"}, {Addr: "b:1"}}}, "ID 2 is used twice"},
		{"bad network", StaticOptions{Upstreams: []Endpoint{{Network: "udp", Addr: "a:1"}}}, `Network is "udp"`},
		{"no address", StaticOptions{Upstreams: []Endpoint{{}}}, "Addr is empty"},
		{"relative path", StaticOptions{Upstreams: twoUpstreams(), HealthPath: "health"}, "HealthPath"},
		{"negative fails", StaticOptions{Upstreams: twoUpstreams(), Fails: -1}, "Fails is -1"},
		{"negative interval", StaticOptions{Upstreams: twoUpstreams(), Interval: -time.Second}, "Interval is -1s"},
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
