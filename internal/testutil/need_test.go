package testutil

import (
	"runtime"
	"testing"
	"time"
)

// recTB records how a helper ended the test instead of ending it.
type recTB struct {
	testing.TB
	failed, skipped string
}

func (r *recTB) Helper() {}
func (r *recTB) Fatalf(format string, args ...any) {
	r.failed = format
	runtime.Goexit()
}
func (r *recTB) Skip(args ...any) {
	r.skipped = "skip"
	runtime.Goexit()
}

// run calls f with r on a goroutine of its own, as the testing package
// runs a test, so that Goexit ends f alone.
func run(r *recTB, f func(testing.TB)) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f(r)
	}()
	<-done
}

func TestMissingSkipsUnlessCI(t *testing.T) {
	t.Setenv("CI", "")
	r := &recTB{TB: t}
	run(r, func(tb testing.TB) { Missing(tb, "node is not on PATH") })
	if r.skipped == "" || r.failed != "" {
		t.Errorf("without CI: skipped %q, failed %q; want a skip", r.skipped, r.failed)
	}
	t.Setenv("CI", "true")
	r = &recTB{TB: t}
	run(r, func(tb testing.TB) { Missing(tb, "node is not on PATH") })
	if r.failed == "" || r.skipped != "" {
		t.Errorf("under CI: skipped %q, failed %q; want a failure", r.skipped, r.failed)
	}
}

func TestPollUntil(t *testing.T) {
	n := 0
	r := &recTB{TB: t}
	run(r, func(tb testing.TB) {
		PollUntil(tb, time.Second, time.Millisecond, "third call", func() bool { n++; return n == 3 })
	})
	if r.failed != "" || n != 3 {
		t.Errorf("got %d calls, failed %q; want 3 calls and no failure", n, r.failed)
	}
	r = &recTB{TB: t}
	run(r, func(tb testing.TB) {
		PollUntil(tb, 5*time.Millisecond, time.Millisecond, "never", func() bool { return false })
	})
	if r.failed == "" {
		t.Error("a condition never met did not fail the test")
	}
}
