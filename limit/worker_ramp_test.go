package limit

import (
	"testing"
	"time"
)

// A worker's limit is ramping from its start until it is first cut: while
// its loop is idle it doubles, and Ramping says so; a saturated window
// cuts it and ends the ramp for good, even once the loop is idle again.
func TestWorkerRamping(t *testing.T) {
	now := time.Unix(0, 0)
	w, err := NewWorker(now, WorkerOptions{Max: 64})
	if err != nil {
		t.Fatal(err)
	}
	window := func(sat float64) int { return windowOf(w, &now, w.Limit(), w.Limit(), 60*time.Millisecond, sat) }
	if !w.Ramping() {
		t.Fatal("a new worker: got not ramping, want ramping")
	}
	for _, want := range []int{2, 4, 8} {
		if got := window(0.05); got != want || !w.Ramping() {
			t.Fatalf("an idle loop: got limit %d, ramping %v; want %d, ramping", got, w.Ramping(), want)
		}
	}
	if got := window(0.99); got != 7 || w.Ramping() {
		t.Fatalf("a saturated loop at 8: got limit %d, ramping %v; want 7, the ramp over", got, w.Ramping())
	}
	window(0.05)
	if w.Ramping() {
		t.Error("idle again after a cut: got ramping, want the ramp over for good")
	}
}
