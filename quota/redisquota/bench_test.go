package redisquota_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/quota"
)

// BenchmarkLease is one interval's batch of a Limiter with 1,000 active
// tenants: one pipeline of 1,000 scripts to a local Redis.
func BenchmarkLease(b *testing.B) {
	r := testutil.StartRedis(b)
	s := newStore(b, r.URL())
	ctx := context.Background()
	ls := make([]quota.Lease, 1000)
	for i := range ls {
		ls[i] = quota.Lease{Tenant: fmt.Sprint("tenant-", i), Rate: 1e6, Burst: 1 << 20, Want: 5}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Lease(ctx, ls); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(ls)), "ns/lease")
}
