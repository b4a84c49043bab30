package quota

import (
	"hash/maphash"
	"strings"
	"sync"
	"sync/atomic"
)

// bucket is one tenant's local tokens under one limit.
type bucket struct {
	// check tells this bucket's tenant from another whose first hash is
	// the same (see tenants): read with avail, on the same cache line.
	check uint64
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
	h   uint64 // its key in the shard's map

	// Owned by the lease goroutine.
	idle  int     // leases since the last request
	local float64 // tokens accrued at the local share while the store fails
}

// bucketKey names a bucket: its limit's name (Request.Quota) and tenant.
type bucketKey struct{ quota, tenant string }

// tenants is the set of buckets, sharded so that a tenant's lookup takes
// only its shard's read lock. A bucket is found by a 64-bit hash of its
// name, and told apart by a second, independent one (check), so that a
// request's lookup touches the map and the bucket and not the key's
// bytes: with thousands of tenants each of those is a cache miss. The
// hashes are seeded at random per process; two names would share a
// bucket only if both collided, a chance of 2^-128 a pair. A name whose
// first hash alone collides with a tracked one is kept apart, in
// collided. Each shard holds at most its share of MaxTracked buckets (one
// at least): a new tenant in a full shard replaces one (the map's first
// in iteration order, an arbitrary one). Losing a bucket loses its leased
// tokens, or forgives its credit: at most one credit's worth of requests
// more for a tenant pushed out, which the bound is worth.
type tenants struct {
	seed, seed2 maphash.Seed
	per         int // buckets per shard
	shards      [numShards]shard
}

const numShards = 32

type shard struct {
	mu       sync.RWMutex
	m        map[uint64]*bucket
	collided map[bucketKey]*bucket
	_        [64]byte // a shard's lock off its neighbours' cache line
}

func (t *tenants) init(n int) {
	t.seed, t.seed2 = maphash.MakeSeed(), maphash.MakeSeed()
	t.per = max(1, n/numShards)
	for i := range t.shards {
		t.shards[i].m = make(map[uint64]*bucket)
		t.shards[i].collided = make(map[bucketKey]*bucket)
	}
}

// hashes returns the two hashes of (quota, tenant).
func (t *tenants) hashes(quota, tenant string) (h, check uint64) {
	h, check = maphash.String(t.seed, tenant), maphash.String(t.seed2, tenant)
	if quota != "" {
		h ^= maphash.String(t.seed, quota) * 0x9e3779b97f4a7c15
		check ^= maphash.String(t.seed2, quota) * 0x9e3779b97f4a7c15
	}
	return h, check
}

func (t *tenants) shard(h uint64) *shard { return &t.shards[h>>59] } // the map uses the low bits

// getLocked returns the bucket of (quota, tenant). REQUIRES sh.mu held
// (read or write).
func (sh *shard) getLocked(h, check uint64, quota, tenant string) *bucket {
	if b := sh.m[h]; b != nil && b.check == check {
		return b
	}
	if len(sh.collided) == 0 {
		return nil
	}
	return sh.collided[bucketKey{quota, tenant}]
}

func (sh *shard) len() int { return len(sh.m) + len(sh.collided) }

func (t *tenants) find(quota, tenant string) *bucket {
	h, check := t.hashes(quota, tenant)
	sh := t.shard(h)
	sh.mu.RLock()
	b := sh.getLocked(h, check, quota, tenant)
	sh.mu.RUnlock()
	return b
}

// add returns the tenant's bucket, made now under lim unless another
// request made it first.
func (t *tenants) add(quota, tenant string, lim *limitState) *bucket {
	h, check := t.hashes(quota, tenant)
	sh := t.shard(h)
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if b := sh.getLocked(h, check, quota, tenant); b != nil {
		return b
	}
	if sh.len() >= t.per {
		sh.evictLocked()
	}
	// A copy: the key must not keep the request's header memory alive.
	b := &bucket{check: check, lim: lim, h: h, key: bucketKey{strings.Clone(quota), strings.Clone(tenant)}}
	if sh.m[h] == nil {
		sh.m[h] = b
	} else {
		sh.collided[b.key] = b
	}
	return b
}

// evictLocked forgets one bucket, the first in a map's iteration order:
// an arbitrary one. REQUIRES sh.mu held.
func (sh *shard) evictLocked() {
	for k := range sh.collided {
		delete(sh.collided, k)
		return
	}
	for h := range sh.m {
		delete(sh.m, h)
		return
	}
}

// remove forgets b if it is still idle and owes nothing.
func (t *tenants) remove(b *bucket) {
	sh := t.shard(b.h)
	sh.mu.Lock()
	if b.used.Load() == 0 && b.denied.Load() == 0 && b.avail.Load() >= 0 {
		if sh.m[b.h] == b {
			delete(sh.m, b.h)
		} else if sh.collided[b.key] == b {
			delete(sh.collided, b.key)
		}
	}
	sh.mu.Unlock()
}

// each calls f for every bucket, a shard at a time under its read lock.
func (t *tenants) each(f func(*bucket)) {
	for i := range t.shards {
		sh := &t.shards[i]
		sh.mu.RLock()
		for _, b := range sh.m {
			f(b)
		}
		for _, b := range sh.collided {
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
