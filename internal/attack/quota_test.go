package attack

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// TestQuotaAcrossInstances: one tenant spreads 3x its quota evenly over
// three sluice instances sharing one Redis. The fleet admits the tenant's
// rate (±10%, its burst spent first), answers the rest 429 with
// Retry-After and Sluice-Shed: quota, and none of those reaches the
// upstream. Then Redis goes away: still no 5xx, the instances say so in
// /stats; and it comes back: the rate holds again.
func TestQuotaAcrossInstances(t *testing.T) {
	r := testutil.StartRedis(t)
	var upstreamHits atomic.Int64
	up := Upstream(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		upstreamHits.Add(1)
		io.WriteString(w, "ok\n")
	}), 64)
	const rate, burst = 50, 50
	cfg := fmt.Sprintf(`
server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
tenants:
  key: header:X-Tenant
  quota: {rate: %d, burst: %d, store: %q}
%s`, rate, burst, r.URL(), up)
	var fleet [3]*Sluice
	for i := range fleet {
		fleet[i] = Start(t, cfg)
	}
	// The instances count each other from their heartbeats (1 s apart).
	for _, s := range fleet {
		s.WaitStats(t, "3 instances in the quota's heartbeats", func(st Stats) bool {
			q, _ := st.Raw["quota"].(map[string]any)
			return q != nil && q["instances"] == 3.0
		})
	}

	type counts struct{ ok, quota, other, fivexx int }
	// send sends 3x the rate for d, evenly over the instances, and counts
	// the answers.
	send := func(d time.Duration) counts {
		var mu sync.Mutex
		var c counts
		var wg sync.WaitGroup
		for _, s := range fleet {
			wg.Go(func() {
				client := &http.Client{Timeout: 5 * time.Second}
				defer client.CloseIdleConnections()
				tick := time.NewTicker(time.Second / rate) // rate per instance: 3x over three
				defer tick.Stop()
				for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
					req, _ := http.NewRequest(http.MethodGet, "http://"+s.Addr+"/", nil)
					req.Header.Set("X-Tenant", "acme")
					resp, err := client.Do(req)
					if err != nil {
						t.Errorf("GET %s: %v", s.Addr, err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					mu.Lock()
					switch {
					case resp.StatusCode == http.StatusOK:
						c.ok++
					case resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Sluice-Shed") == "quota":
						c.quota++
						if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 {
							t.Errorf("429 with Retry-After %q; want whole seconds >= 1", resp.Header.Get("Retry-After"))
						}
					case resp.StatusCode >= 500:
						c.fivexx++
					default:
						c.other++
					}
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return c
	}

	send(time.Second) // the burst
	before := upstreamHits.Load()
	const window = 5 * time.Second
	c := send(window)
	want := rate * window.Seconds()
	if float64(c.ok) < 0.9*want || float64(c.ok) > 1.1*want {
		t.Errorf("Redis up: %d admitted in %v over 3 instances; want %v ± 10%% (%+v)", c.ok, window, want, c)
	}
	if c.quota < c.ok || c.other+c.fivexx > 0 {
		t.Errorf("Redis up: answers %+v; want the rest 429 quota, nothing else", c)
	}
	if hits := upstreamHits.Load() - before; hits != int64(c.ok) {
		t.Errorf("upstream saw %d requests; want only the %d admitted", hits, c.ok)
	}
	t.Logf("Redis up: %+v in %v (rate %d)", c, window, rate)

	r.Stop()
	c = send(2 * time.Second)
	if c.fivexx > 0 || c.other > 0 || c.ok == 0 {
		t.Errorf("Redis gone: answers %+v; want 200s and 429s, no 5xx", c)
	}
	for _, s := range fleet {
		st := s.Stats(t)
		if q, _ := st.Raw["quota"].(map[string]any); q == nil || q["storeUp"] != false {
			t.Errorf("Redis gone: /stats quota = %v; want storeUp false", st.Raw["quota"])
		}
	}
	r.Start()
	for _, s := range fleet {
		s.WaitStats(t, "the store back", func(st Stats) bool {
			q, _ := st.Raw["quota"].(map[string]any)
			return q != nil && q["storeUp"] == true
		})
	}
	send(time.Second) // the burst again: the new Redis has none spent
	c = send(3 * time.Second)
	if want := rate * 3.0; float64(c.ok) < 0.9*want || float64(c.ok) > 1.1*want {
		t.Errorf("Redis back: %d admitted in 3 s; want %v ± 10%% (%+v)", c.ok, want, c)
	}
	for _, s := range fleet {
		s.Stop(t)
	}
}
