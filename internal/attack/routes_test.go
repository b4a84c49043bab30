package attack

import (
	"context"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Spellings of a path that a worker serves alike match the route that
// classifies them: case and percent-encoding do not skip the /api route;
// spellings a worker could read as another path (dot segments, repeated
// slashes) are refused before any route is matched (see
// TestPathClassifiedIsForwarded). The priority the worker is sent
// (Sluice-Priority) says which route matched.
func TestRoutesMatchCleanedPaths(t *testing.T) {
	rec := &headerRecorder{}
	s := Start(t, `
server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
routes:
  - match: {pathPrefix: /api}
    priority: sheddable
`+Upstream(t, rec, 1))
	for _, tt := range []struct {
		target string
		code   int
		want   string
	}{
		{"/api/x", 200, "sheddable"},
		{"/API/x", 200, "sheddable"},
		{"/Api/X", 200, "sheddable"},
		{"/%61pi/x", 200, "sheddable"},
		{"/%41PI/x", 200, "sheddable"},
		{"/static/x", 200, "critical"},
		{"//api/x", 400, ""},
		{"/./api/x", 400, ""},
		{"/api/../api/x", 400, ""},
		{"/static/../api/x", 400, ""},
	} {
		t.Run(tt.target, func(t *testing.T) {
			c := Dial(t, s.Addr)
			code, _ := RoundTrip(t, c, "GET "+tt.target+" HTTP/1.1\r\nHost: front.example\r\nConnection: close\r\n\r\n")
			c.Close()
			if code != tt.code {
				t.Fatalf("got %d, want %d", code, tt.code)
			}
			got := rec.take()
			if tt.code != http.StatusOK {
				if got != nil {
					t.Errorf("refused, yet the worker got it")
				}
				return
			}
			if got := got.Get("Sluice-Priority"); got != tt.want {
				t.Errorf("worker got Sluice-Priority %q, want %q (the /api route's)", got, tt.want)
			}
		})
	}
	s.Stop(t)
}

// A client sending a fresh tenant key with every request, at four times
// the capacity, does not get a steady tenant 429'd: the fresh keys compete
// as one newcomer, and the flood's own backlog takes the 429s. A small
// queue without CoDel keeps it full, so that every arrival of the steady
// tenant meets the full-queue decision (CoDel's would only add to it).
func TestFreshTenantKeysDoNotGetSteadyTenant429d(t *testing.T) {
	const service = 20 * time.Millisecond // one slot: 50/s
	upstream := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select { // the work, bounded by the client
		case <-time.After(service):
		case <-r.Context().Done():
		}
	})
	s := Start(t, `
server: {listen: {{listen}}, drainDelay: 0s, backpressure: {queueSize: 20}}
admin: {listen: {{admin}}}
overload: {codel: {enabled: false}}
tenants: {key: "header:X-Tenant"}
`+Upstream(t, upstream, 1))

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	defer tr.CloseIdleConnections()
	send := func(tenant string) int {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.Addr+"/x", nil)
		req.Header.Set("X-Tenant", tenant)
		resp, err := tr.RoundTrip(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// The steady tenant has been served before the flood: it is a tenant
	// sluice knows, as a real customer is.
	for range 3 {
		if code := send("steady"); code != http.StatusOK {
			t.Fatalf("steady tenant alone: got %d, want 200", code)
		}
	}

	// The flood: 200 requests a second (4x capacity) for 3 s, each with a
	// key never seen before, at most 64 in flight.
	var flood sync.WaitGroup
	var floodCodes sync.Map
	stop := make(chan struct{})
	flood.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		sem := make(chan struct{}, 64)
		for i := 0; i < 600; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			sem <- struct{}{}
			flood.Go(func() {
				defer func() { <-sem }()
				code := send("fresh-" + strconv.Itoa(i))
				n, _ := floodCodes.LoadOrStore(code, new(atomic.Int64))
				n.(*atomic.Int64).Add(1)
			})
		}
	})
	// Meanwhile the steady tenant sends 10 a second, one at a time: well
	// within any fair share.
	steady := map[int]int{}
	var slowest time.Duration
	tick := time.NewTicker(100 * time.Millisecond)
	for range 25 {
		<-tick.C
		t0 := time.Now()
		steady[send("steady")]++
		slowest = max(slowest, time.Since(t0))
	}
	tick.Stop()
	close(stop)
	flood.Wait()

	floodSummary := map[int]int64{}
	floodCodes.Range(func(k, v any) bool { floodSummary[k.(int)] = v.(*atomic.Int64).Load(); return true })
	if steady[http.StatusTooManyRequests] > 0 || steady[http.StatusOK] < 24 {
		t.Errorf("steady tenant: got statuses %v, want all 200 (no 429) with the flood's %v", steady, floodSummary)
	}
	// Served in its turn, not after the flood: a few service times, with
	// room for two loaded cores (without the newcomers' flow it waits
	// behind every fresh key until the flood ends, seconds).
	if slowest > time.Second {
		t.Errorf("steady tenant: slowest request took %v, want under 1s: it was starved by the fresh keys", slowest)
	}
	if floodSummary[http.StatusTooManyRequests] == 0 {
		t.Errorf("fresh keys: got statuses %v, want 429s: the newcomers are over their share", floodSummary)
	}
	t.Logf("steady %v (slowest %v), flood %v", steady, slowest, floodSummary)
	tr.CloseIdleConnections()
	s.Stop(t)
}
