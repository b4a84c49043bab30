package proxy

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

type gate struct {
	open chan struct{}
	ran  *atomic.Int32
}

func (g gate) run() {
	<-g.open
	g.ran.Add(1)
}

func (rs *runners) parked() int {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return len(rs.idle)
}

// Runners park when their task is done and take the next one, exit after
// runnerIdle without work, and closeIdle ends them at once.
func TestRunners(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var rs runners
		var ran atomic.Int32
		a, b := gate{make(chan struct{}), &ran}, gate{make(chan struct{}), &ran}
		rs.start(a)
		rs.start(b) // a is busy: a second goroutine
		synctest.Wait()
		if n := rs.parked(); n != 0 {
			t.Fatalf("got %d parked while both run, want 0", n)
		}
		close(a.open)
		close(b.open)
		synctest.Wait()
		if n := rs.parked(); n != 2 || ran.Load() != 2 {
			t.Fatalf("got %d parked and %d run, want 2 and 2", n, ran.Load())
		}
		c := gate{make(chan struct{}), &ran}
		rs.start(c) // on a parked runner
		if n := rs.parked(); n != 1 {
			t.Errorf("got %d parked after a start, want 1: a parked runner took it", n)
		}
		close(c.open)
		synctest.Wait()
		if n := rs.parked(); n != 2 || ran.Load() != 3 {
			t.Errorf("got %d parked and %d run, want 2 and 3", n, ran.Load())
		}
		time.Sleep(runnerIdle)
		synctest.Wait()
		if n := rs.parked(); n != 0 {
			t.Errorf("got %d parked after %v without work, want 0", n, runnerIdle)
		}
		d := gate{make(chan struct{}), &ran}
		close(d.open)
		rs.start(d)
		synctest.Wait()
		if n := rs.parked(); n != 1 {
			t.Fatalf("got %d parked, want 1", n)
		}
		rs.closeIdle()
		if n := rs.parked(); n != 0 {
			t.Errorf("got %d parked after closeIdle, want 0", n)
		}
		// The bubble ends only if every runner has exited.
	})
}
