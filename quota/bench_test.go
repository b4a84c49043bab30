package quota_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/limit"
	"github.com/sluicehq/sluice/quota"
)

// BenchmarkAcquireQuota is a request's admission with the quota off and
// on: what a tenant's quota adds to the Controller's fast path (a tenant
// it tracks already, within its quota). The burst is large enough for
// every iteration to be admitted on the tenant's credit, which is the
// same path as a leased token: one lookup, two atomic adds.
func BenchmarkAcquireQuota(b *testing.B) {
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		o := admission.Options{Limit: limit.NewFixed(1000), SampleWindow: -1}
		if on {
			o.Quota = newLimiter(b, quota.Options{Limit: quota.Limit{Rate: 1e6, Burst: 1 << 30}, Instances: 1, MaxTracked: 100_000})
		}
		c, err := admission.New(o)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(c.Close)
		// Many tenants tracked, as in production: the lookup is a map's
		// of 10,000.
		tenants := make([]admission.Request, 10_000)
		for i := range tenants {
			tenants[i] = admission.Request{Tenant: fmt.Sprint("tenant-", i)}
			p, _ := c.Acquire(context.Background(), tenants[i])
			p.Release()
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				p, err := c.Acquire(ctx, tenants[i%len(tenants)])
				if err != nil {
					b.Fatal(err)
				}
				p.Release()
				i++
			}
		})
		b.Run(name+"/parallel", func(b *testing.B) {
			ctx := context.Background()
			b.ReportAllocs()
			var g atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				i := int(g.Add(1)) * 5003 // each goroutine its own tenants
				for pb.Next() {
					p, err := c.Acquire(ctx, tenants[i%len(tenants)])
					if err != nil {
						b.Error(err)
						return
					}
					p.Release()
					i += 7
				}
			})
		})
	}
}
