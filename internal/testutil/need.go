package testutil

import (
	"os"
	"testing"
	"time"
)

// Missing skips the test because something it needs is missing (why
// says what, and how to get it), or fails it when CI is set: CI installs
// everything the tests need (.ci/run), so there a missing piece is a
// broken machine, not a reason to test less.
func Missing(tb testing.TB, why string) {
	tb.Helper()
	if os.Getenv("CI") != "" {
		tb.Fatalf("%s (CI is set, so this test may not skip)", why)
	}
	tb.Skip(why)
}

// PollUntil calls cond every interval until it returns true, and fails the
// test if it has not within d: for the outside of real processes, which
// give no other signal of their state.
func PollUntil(tb testing.TB, d, interval time.Duration, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(interval)
	}
}
