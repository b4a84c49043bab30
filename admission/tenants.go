package admission

import (
	"hash/maphash"
	"sync/atomic"
)

// DefaultMaxTrackedTenants is the number of tenants the queue remembers as
// served recently when Options.MaxTrackedTenants is zero.
const DefaultMaxTrackedTenants = 10000

// tenantMemory is the set of tenants served recently, bounded whatever keys
// clients send: the fair queue gives a tenant in it a flow of its own, and
// makes any other wait with the newcomers (see fairQueue).
//
// It is two generations of at most half the bound each, not an exact LRU:
// a tenant served in the current generation, or in the previous one and
// then again, stays; one not served for a whole generation of other
// tenants is forgotten. O(1) and no per-entry links; the price is that a
// tenant may be forgotten after as few as max/2 others were served. The
// zero value remembers nothing: call init. Not safe for concurrent use
// (the Controller's mutex guards it).
type tenantMemory struct {
	gen       int // entries per generation
	cur, prev map[string]struct{}
}

// init empties m and bounds it to max tenants (two at least).
func (m *tenantMemory) init(max int) {
	m.gen = max / 2
	if m.gen < 1 {
		m.gen = 1
	}
	m.cur, m.prev = make(map[string]struct{}), nil
}

func (m *tenantMemory) has(t string) bool {
	if _, ok := m.cur[t]; ok {
		return true
	}
	_, ok := m.prev[t]
	return ok
}

// add remembers t as served now.
func (m *tenantMemory) add(t string) {
	if t == "" {
		return
	}
	if _, ok := m.cur[t]; ok {
		return
	}
	if len(m.cur) >= m.gen {
		m.prev, m.cur = m.cur, make(map[string]struct{})
	}
	m.cur[t] = struct{}{}
}

// len returns the number of tenants remembered, for tests of the bound.
func (m *tenantMemory) len() int { return len(m.cur) + len(m.prev) }

// fastSeen remembers, without a lock, tenants the Controller admitted on
// its fast path: with a slot free and nobody waiting a request never
// enters the queue, so a tenant served only that way (everyone, before an
// overload) would otherwise be a newcomer the moment a queue forms. One
// hash and one atomic store per fast admission of a named tenant; nothing
// for the shared tenant "". A slot holds one tenant's hash, so it is a
// cache: another tenant may overwrite it, and the tenant is then unknown
// again until served. The zero value is ready. Safe for concurrent use.
type fastSeen struct {
	seed  maphash.Seed
	slots [fastSeenSlots]atomic.Uint64
}

const fastSeenSlots = 1024

func newFastSeen() *fastSeen { return &fastSeen{seed: maphash.MakeSeed()} }

func (f *fastSeen) hash(t string) uint64 { return maphash.String(f.seed, t) | 1 } // 0 is an empty slot

func (f *fastSeen) add(t string) {
	h := f.hash(t)
	if s := &f.slots[h%fastSeenSlots]; s.Load() != h { // no store, no cache-line transfer, when it is there
		s.Store(h)
	}
}

func (f *fastSeen) has(t string) bool {
	h := f.hash(t)
	return f.slots[h%fastSeenSlots].Load() == h
}
