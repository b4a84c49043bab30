package quota_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/quota"
)

// TestSimulationFleet: 10 instances share one store; 10,000 tenants at
// half their rate and one at 3x, with most of every tenant's load on
// instance 0. The hot tenant's fleet-wide admitted rate stays within
// ±10% of its rate (plus its burst once); the others are served.
func TestSimulationFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("simulation: 6 s of 10 instances and 10,000 tenants")
	}
	synctest.Test(t, func(t *testing.T) {
		const (
			instances = 10
			tenants   = 10_000
			rate      = 10.0 // per tenant
			burst     = 40
			step      = 10 * time.Millisecond
			steps     = 600 // 6 s
			warm      = 100 // 1 s: the burst spent, heartbeats counted
		)
		store := quota.NewMemoryStore()
		var ls [instances]*quota.Limiter
		for i := range ls {
			ls[i] = newLimiter(t, quota.Options{Store: store, Limit: quota.Limit{Rate: rate, Burst: burst}, MaxTracked: 2 * tenants})
			run(t, ls[i])
		}
		names := make([]string, tenants)
		for i := range names {
			names[i] = fmt.Sprint("tenant-", i)
		}
		// instance is where a tenant's k-th request goes: 7 in 10 to
		// instance 0, the rest spread over the others.
		instance := func(tenant, k int) int {
			if k%10 < 7 {
				return 0
			}
			return 1 + (tenant+k)%(instances-1)
		}
		var hotSent, hotOK, hotWarmOK, coldSent, coldOK int
		sent := make([]int, tenants)
		for s := range steps {
			// The hot tenant: 3x its rate, 0.3 a step.
			for n := (s+1)*3/10 - s*3/10; n > 0; n-- {
				if ok, _ := ls[instance(0, hotSent)].Take(admission.Request{Tenant: "hot"}); ok {
					hotOK++
					if s < warm {
						hotWarmOK++
					}
				}
				hotSent++
			}
			// The others: half their rate, one request every 20 steps each,
			// at staggered steps.
			for i := (s % 20); i < tenants; i += 20 {
				if ok, _ := ls[instance(i, sent[i])].Take(admission.Request{Tenant: names[i]}); ok {
					coldOK++
				}
				sent[i]++
				coldSent++
			}
			time.Sleep(step)
		}
		secs := float64(steps-warm) * step.Seconds()
		got := float64(hotOK-hotWarmOK) / secs
		if got < 0.9*rate || got > 1.1*rate {
			t.Errorf("hot tenant: %.2f/s admitted over the fleet after the warm-up; want %v ± 10%%", got, rate)
		}
		if all := float64(hotOK); all > 1.1*rate*steps*step.Seconds()+burst {
			t.Errorf("hot tenant: %v admitted in 6 s; want at most rate x 6 s + 10%% + burst", all)
		}
		if ratio := float64(coldOK) / float64(coldSent); ratio < 0.99 {
			t.Errorf("tenants under their rate: %d of %d admitted (%.3f); want >= 99%%", coldOK, coldSent, ratio)
		}
		t.Logf("hot tenant %.2f/s (rate %v); others %d of %d admitted; %d tenants tracked on instance 0", got, rate, coldOK, coldSent, ls[0].Stats().Tenants)
	})
}
