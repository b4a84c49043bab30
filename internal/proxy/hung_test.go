package proxy_test

import (
	"net/http"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
)

// With OnHung set, a worker found hung is reported once, taken out of
// rotation before its slot is freed, and never given another request: the
// next request waits for a live worker rather than going into the hung
// one (an endless loop would swallow it), until the supervisor's Remove.
func TestHungWorkerReportedAndNotReused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var mu sync.Mutex
		var reported []int
		g := newRig(t, proxy.Options{Timeout: time.Second, HangGrace: 2 * time.Second, OnHung: func(id int) {
			mu.Lock()
			defer mu.Unlock()
			reported = append(reported, id)
		}}, admission.Options{QueueTimeout: time.Minute})
		w1, id1 := g.worker(2)

		a := g.get("/block/never")
		b := g.get("/block/never2")
		synctest.Wait()
		time.Sleep(3 * time.Second) // budget plus grace: both are hung
		synctest.Wait()
		for _, c := range []*call{a, b} {
			if code, _ := c.result(); code != http.StatusGatewayTimeout {
				t.Errorf("got %d for a hung request, want 504", code)
			}
		}
		mu.Lock()
		got := slices.Clone(reported)
		mu.Unlock()
		if !slices.Equal(got, []int{id1}) {
			t.Errorf("OnHung got %v, want [%d] once", got, id1)
		}
		if g.p.Ready() {
			t.Error("Ready: got true with the only worker hung, want false")
		}

		// No routable worker: a fast 503, as while a crashed worker restarts.
		if code, _ := g.get("/after").result(); code != http.StatusServiceUnavailable {
			t.Errorf("got %d with the only worker hung, want 503", code)
		}
		if seen := w1.seen(); slices.Contains(seen, "/after") {
			t.Fatalf("the hung worker was given %q, want nothing after the hang", seen)
		}
		g.worker(1) // the replacement
		if code, body := g.get("/after").result(); code != 200 || body != "w2 /after" {
			t.Errorf("got %d %q, want 200 from the replacement", code, body)
		}
		if st := g.p.Stats(); st.Hung != 2 {
			t.Errorf("got %d hung, want 2", st.Hung)
		}
		g.p.Remove(id1)
		if st := g.p.Stats(); st.Outstanding != 0 {
			t.Errorf("got %d slots taken at the end, want 0", st.Outstanding)
		}
	})
}
