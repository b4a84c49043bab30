package admission_test

import (
	"context"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
)

// A client that sends a fresh tenant key with every request competes as
// one newcomer, not as a new tenant each time: a steady tenant within its
// share keeps every request (no 429 for it) while the flood is shed, with
// CoDel on and off.
func TestFreshTenantKeysDoNotStarveSteadyTenant(t *testing.T) {
	const service = 10 * time.Millisecond // 4 slots: capacity 400/s
	for _, codel := range []bool{false, true} {
		t.Run("codel="+strconv.FormatBool(codel), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				o := admission.Options{QueueSize: 100, QueueTimeout: time.Second}
				if codel {
					o.CoDelTarget, o.CoDelInterval = 5*time.Millisecond, 100*time.Millisecond
				}
				c := newController(t, 4, o)
				var mu sync.Mutex
				steadyShed := map[admission.Reason]int{}
				steadyOffered, steadyServed, floodServed, floodOffered := 0, 0, 0, 0
				var wg sync.WaitGroup
				run := func(seed uint64, rate float64, tenant func(i int) string, steady bool) {
					defer wg.Done()
					rng := rand.New(rand.NewPCG(seed, 0))
					end := time.Now().Add(5 * time.Second)
					for i := 0; ; i++ {
						time.Sleep(time.Duration(rng.ExpFloat64() / rate * float64(time.Second)))
						if !time.Now().Before(end) {
							return
						}
						d := time.Duration(float64(service) * (0.5 + rng.Float64()))
						req := admission.Request{Tenant: tenant(i)}
						wg.Go(func() {
							p, err := c.Acquire(context.Background(), req)
							mu.Lock()
							if steady {
								steadyOffered++
							} else {
								floodOffered++
							}
							if err != nil {
								if steady {
									r, _ := admission.ShedReason(err)
									steadyShed[r]++
								}
								mu.Unlock()
								return
							}
							if steady {
								steadyServed++
							} else {
								floodServed++
							}
							mu.Unlock()
							time.Sleep(d)
							p.DoneSample(limit.Sample{Now: time.Now(), RTT: d})
						})
					}
				}
				wg.Add(2)
				go run(1, 100, func(int) string { return "steady" }, true)
				go run(2, 1600, func(i int) string { return "fresh-" + strconv.Itoa(i) }, false)
				wg.Wait()

				if n := steadyShed[admission.ReasonTenant]; n > 0 {
					t.Errorf("steady tenant: got %d 429s (sheds %v), want none", n, steadyShed)
				}
				if ratio := float64(steadyServed) / float64(steadyOffered); ratio < 0.99 {
					t.Errorf("steady tenant: success ratio %.3f (sheds %v), want >= 0.99", ratio, steadyShed)
				}
				// The flood still gets what the steady tenant leaves.
				if got := float64(floodServed) / 5; got < 250 {
					t.Errorf("fresh keys: served %.0f/s of %d offered, want about the 300/s the steady tenant leaves", got, floodOffered/5)
				}
			})
		})
	}
}
