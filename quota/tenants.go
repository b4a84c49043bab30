package quota

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// bucket is one tenant's local tokens under one limit.
type bucket struct {
	// avail is the tokens leased and not yet taken; below zero, the
	// requests admitted on credit that the next lease pays for.
	avail atomic.Int64
	// used and denied count the requests admitted and refused since the
	// last lease: the demand a lease is sized by.
	used, denied atomic.Int64
	// retryAt is when a refused request would next be accepted, in
	// nanoseconds since the Limiter's epoch.
	retryAt atomic.Int64

	lim *limitState
	key bucketKey

	// Owned by the lease goroutine.
	idle  int     // leases since the last request
	local float64 // tokens accrued at the local share while the store fails
}

type bucketKey struct{ quota, tenant string }

// tenants is the set of buckets, sharded so that a tenant's lookup takes
// only its shard's read lock. Each shard holds at most its share of
// MaxTracked buckets (one at least): a new tenant in a full shard replaces one (the map's
// first in iteration order, an arbitrary one). Losing a bucket loses its
// leased tokens, or forgives its credit: at most one credit's worth of
// requests more for a tenant pushed out, which the bound is worth.
type tenants struct {
	seed   maphash.Seed
	per    int // buckets per shard
	shards [numShards]shard
}

const numShards = 32

type shard struct {
	mu sync.RWMutex
	m  map[bucketKey]*bucket
	_  [64]byte // a shard's lock off its neighbours' cache line
}

func (t *tenants) init(n int) {
	t.seed = maphash.MakeSeed()
	t.per = max(1, n/numShards)
	for i := range t.shards {
		t.shards[i].m = make(map[bucketKey]*bucket)
	}
}

func (t *tenants) shard(tenant string) *shard {
	return &t.shards[maphash.String(t.seed, tenant)%numShards]
}

func (t *tenants) find(quota, tenant string) *bucket {
	sh := t.shard(tenant)
	sh.mu.RLock()
	b := sh.m[bucketKey{quota, tenant}]
	sh.mu.RUnlock()
	return b
}

// add returns the tenant's bucket, made now under lim unless another
// request made it first.
func (t *tenants) add(quota, tenant string, lim *limitState) *bucket {
	sh := t.shard(tenant)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b := sh.m[bucketKey{quota, tenant}]; b != nil {
		return b
	}
	if len(sh.m) >= t.per {
		for k := range sh.m {
			delete(sh.m, k)
			break
		}
	}
	// A copy: the key must not keep the request's header memory alive.
	k := bucketKey{strings.Clone(quota), strings.Clone(tenant)}
	b := &bucket{lim: lim, key: k}
	sh.m[k] = b
	return b
}

// remove forgets b if it is still idle and owes nothing.
func (t *tenants) remove(b *bucket) {
	sh := t.shard(b.key.tenant)
	sh.mu.Lock()
	if sh.m[b.key] == b && b.used.Load() == 0 && b.denied.Load() == 0 && b.avail.Load() >= 0 {
		delete(sh.m, b.key)
	}
	sh.mu.Unlock()
}

func (t *tenants) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		n += len(sh.m)
		sh.mu.RUnlock()
	}
	return n
}
