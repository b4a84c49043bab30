package proxy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/poison"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

func newPoisonTable(t *testing.T, o poison.Options) *poison.Table {
	t.Helper()
	tb, err := poison.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// A worker's death is reported with the requests it held (Died, as the
// supervisor calls it); a shape held at two deaths is refused before it
// reaches a third worker: 503 with Sluice-Shed: poison. Other shapes go
// on.
func TestPoisonShapeIsShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newPoisonTable(t, poison.Options{})
		g := newRig(t, proxy.Options{Poison: tb}, admission.Options{})
		g.worker(1)
		g.worker(1)
		for range 2 {
			if code, _ := g.get("/ok").result(); code != http.StatusOK {
				t.Fatalf("/ok: got %d, want 200", code)
			}
		}
		dies := map[int]int{}
		diedOn := func() int { // the worker that saw a /die since the last call
			for id, w := range g.workers {
				n := 0
				for _, p := range w.seen() {
					if p == "/die" {
						n++
					}
				}
				if n > dies[id] {
					dies[id] = n
					return id
				}
			}
			return 0
		}
		for i := range 2 {
			if code, _ := g.get("/die").result(); code != http.StatusBadGateway {
				t.Fatalf("/die %d: got %d, want 502", i+1, code)
			}
			id := diedOn()
			if got := g.p.Died(id); got != (supervisor.Death{Served: 1, Held: 1}) {
				t.Errorf("Died(%d) after /die %d: got %+v, want served 1, held 1", id, i+1, got)
			}
		}
		r := httptest.NewRequest("GET", "/die", nil)
		ctx, info := reqinfo.New(r.Context(), time.Now(), "", "", false)
		c := g.send(r.WithContext(ctx), nil)
		if code, _ := c.result(); code != http.StatusServiceUnavailable || c.w.header.Get("Sluice-Shed") != "poison" {
			t.Errorf("third /die: got %d Sluice-Shed %q, want 503 poison", code, c.w.header.Get("Sluice-Shed"))
		}
		// The first quarantine lasts poison.DefaultQuarantine, all of it
		// still to come: the time stands still in the bubble.
		if got, want := c.w.header.Get("Retry-After"), strconv.Itoa(int(poison.DefaultQuarantine/time.Second)); got != want {
			t.Errorf("third /die: got Retry-After %q, want %q, the rest of the quarantine", got, want)
		}
		if info.Shed != "poison" {
			t.Errorf("the access log's shed reason: got %q, want poison", info.Shed)
		}
		if diedOn() != 0 {
			t.Error("a worker saw the third /die")
		}
		if code, _ := g.get("/ok").result(); code != http.StatusOK {
			t.Errorf("/ok after the quarantine: got %d, want 200", code)
		}
		st := g.p.Stats()
		if st.Poison == nil || st.Poison.Quarantined != 1 || st.Poison.Sheds != 1 {
			t.Errorf("Stats.Poison: got %+v, want 1 quarantined, 1 shed", st.Poison)
		}
	})
}

// A worker that held nothing when it died, or a proxy without a table,
// reports no requests: the supervisor counts the death as its command's.
func TestDiedWithoutRequests(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		for _, o := range []proxy.Options{{Poison: newPoisonTable(t, poison.Options{})}, {}} {
			g := newRig(t, o, admission.Options{})
			_, id := g.worker(1)
			g.get("/ok").result()
			if got := g.p.Died(id); got.Held != 0 {
				t.Errorf("Died with nothing held (poison %v): got %+v, want held 0", o.Poison != nil, got)
			}
			g.get("/die").result()
			want := supervisor.Death{}
			if o.Poison != nil {
				want = supervisor.Death{Served: 1, Held: 1}
			}
			if got := g.p.Died(id); got != want {
				t.Errorf("Died after /die (poison %v): got %+v, want %+v", o.Poison != nil, got, want)
			}
		}
	})
}

// A request in flight on the worker when it dies is held: counted, and
// its shape charged, though its own failure comes later.
func TestDiedCountsRequestsInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tb := newPoisonTable(t, poison.Options{After: 1})
		g := newRig(t, proxy.Options{Poison: tb}, admission.Options{})
		w, id := g.worker(2)
		g.get("/ok").result()
		c := g.get("/block/a")
		<-w.started // the /ok
		<-w.started
		if got := g.p.Died(id); got.Held != 1 {
			t.Errorf("Died with /block/a in flight: got %+v, want held 1", got)
		}
		w.open("a")
		c.result()
		if code, _ := g.get("/block/a").result(); code != http.StatusServiceUnavailable {
			t.Errorf("/block/a after the death: got %d, want 503", code)
		}
	})
}

// Past its quarantine, one request of the shape goes through: failing at
// its worker, it sends the shape back for twice as long; served, it lets
// the shape through again.
func TestPoisonProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const q = time.Minute
		tb := newPoisonTable(t, poison.Options{After: 1, Quarantine: q})
		g := newRig(t, proxy.Options{Poison: tb}, admission.Options{})
		w, id := g.worker(1)
		g.get("/ok").result()
		w.fail = "/die"
		if code, _ := g.get("/p").result(); code != http.StatusBadGateway {
			t.Fatalf("/p: got %d, want 502", code)
		}
		g.p.Died(id)
		want := func(when string, code int) {
			t.Helper()
			if got, _ := g.get("/p").result(); got != code {
				t.Fatalf("/p %s: got %d, want %d", when, got, code)
			}
		}
		want("in quarantine", http.StatusServiceUnavailable)
		time.Sleep(q)
		want("as the probe", http.StatusBadGateway)
		want("after the failed probe", http.StatusServiceUnavailable)
		time.Sleep(q) // not yet: 2q
		want("during the second quarantine", http.StatusServiceUnavailable)
		time.Sleep(q)
		w.fail = ""
		want("as the second probe", http.StatusOK)
		want("after the probe was served", http.StatusOK)
	})
}

// BenchmarkProxyServePoison is BenchmarkProxyServe/json with a poison
// table: empty (every death forgotten: the common case), and remembering
// 100 shapes, none of the request's (its shapes are then computed twice).
// Compare with BenchmarkProxyServe/json for the cost of the defence.
func BenchmarkProxyServePoison(b *testing.B) {
	for _, tracked := range []int{0, 100} {
		b.Run(fmt.Sprintf("tracked=%d", tracked), func(b *testing.B) {
			c, err := admission.New(admission.Options{Limit: limit.NewFixed(16), QueueSize: -1, SampleWindow: -1})
			if err != nil {
				b.Fatal(err)
			}
			tb, _ := poison.New(poison.Options{})
			for i := range tracked {
				tb.Died(time.Now(), []poison.Request{{Method: "GET", Path: fmt.Sprintf("/p%c%c", 'a'+i%26, 'a'+i/26)}})
			}
			p, err := proxy.New(proxy.Options{Controller: c, Poison: tb})
			if err != nil {
				b.Fatal(err)
			}
			p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: cannedWorker(b, cannedResponse("application/json", 250)), Concurrency: 8})
			b.Cleanup(func() {
				p.CloseIdleConnections()
				c.Close()
			})
			r := benchRequest(b)
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			for b.Loop() {
				w.reset()
				p.ServeHTTP(w, r)
				if w.status != http.StatusOK {
					b.Fatalf("got %d, want 200", w.status)
				}
			}
		})
	}
}
