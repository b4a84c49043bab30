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

// bucketKey names a bucket: its limit's name (Request.Quota) and tenant.
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

// shard holds its tenants' buckets: under the default limit by tenant
// alone, one string to hash and compare on most requests' path; under a
// named one (a route's own) by name and tenant.
type shard struct {
	mu    sync.RWMutex
	def   map[string]*bucket
	named map[bucketKey]*bucket
	_     [64]byte // a shard's lock off its neighbours' cache line
}

func (t *tenants) init(n int) {
	t.seed = maphash.MakeSeed()
	t.per = max(1, n/numShards)
	for i := range t.shards {
		t.shards[i].def = make(map[string]*bucket)
		t.shards[i].named = make(map[bucketKey]*bucket)
	}
}

func (t *tenants) shard(tenant string) *shard {
	return &t.shards[maphash.String(t.seed, tenant)%numShards]
}

func (sh *shard) get(quota, tenant string) *bucket {
	if quota == "" {
		return sh.def[tenant]
	}
	return sh.named[bucketKey{quota, tenant}]
}

func (sh *shard) len() int { return len(sh.def) + len(sh.named) }

func (t *tenants) find(quota, tenant string) *bucket {
	sh := t.shard(tenant)
	sh.mu.RLock()
	b := sh.get(quota, tenant)
	sh.mu.RUnlock()
	return b
}

// add returns the tenant's bucket, made now under lim unless another
// request made it first.
func (t *tenants) add(quota, tenant string, lim *limitState) *bucket {
	sh := t.shard(tenant)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b := sh.get(quota, tenant); b != nil {
		return b
	}
	if sh.len() >= t.per {
		sh.evictLocked()
	}
	// A copy: the key must not keep the request's header memory alive.
	k := bucketKey{strings.Clone(quota), strings.Clone(tenant)}
	b := &bucket{lim: lim, key: k}
	if quota == "" {
		sh.def[k.tenant] = b
	} else {
		sh.named[k] = b
	}
	return b
}

// evictLocked forgets one bucket, the first in a map's iteration order:
// an arbitrary one. REQUIRES sh.mu held.
func (sh *shard) evictLocked() {
	for k := range sh.def {
		delete(sh.def, k)
		return
	}
	for k := range sh.named {
		delete(sh.named, k)
		return
	}
}

// remove forgets b if it is still idle and owes nothing.
func (t *tenants) remove(b *bucket) {
	sh := t.shard(b.key.tenant)
	sh.mu.Lock()
	if sh.get(b.key.quota, b.key.tenant) == b && b.used.Load() == 0 && b.denied.Load() == 0 && b.avail.Load() >= 0 {
		if b.key.quota == "" {
			delete(sh.def, b.key.tenant)
		} else {
			delete(sh.named, b.key)
		}
	}
	sh.mu.Unlock()
}

// each calls f for every bucket, a shard at a time under its read lock.
func (t *tenants) each(f func(*bucket)) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		for _, b := range sh.def {
			f(b)
		}
		for _, b := range sh.named {
			f(b)
		}
		sh.mu.RUnlock()
	}
}

func (t *tenants) len() int {
	n := 0
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		n += sh.len()
		sh.mu.RUnlock()
	}
	return n
}
