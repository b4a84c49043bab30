package quota

import "testing"

// A tenant whose first hash collides with a tracked tenant's is told apart
// by the second, and gets a bucket of its own.
func TestTenantsCollision(t *testing.T) {
	var ts tenants
	ts.init(1000)
	lim := newLimitState(Limit{Rate: 1})
	a := ts.add("", "a", lim)
	// Make "a" sit where "b" hashes, as a colliding first hash would.
	hb, _ := ts.hashes("", "b")
	sh := ts.shard(hb)
	ts.shard(a.h).mu.Lock()
	delete(ts.shard(a.h).m, a.h)
	ts.shard(a.h).mu.Unlock()
	a.h = hb
	sh.m[hb] = a
	if got := ts.find("", "b"); got != nil {
		t.Fatalf("find(b) = a's bucket; want none: b's second hash differs")
	}
	b := ts.add("", "b", lim)
	if b == a || ts.find("", "b") != b || ts.find("", "b").key.tenant != "b" {
		t.Fatalf("b's bucket = %+v; want one of its own, found again", b)
	}
	if n := ts.len(); n != 2 {
		t.Errorf("%d buckets; want 2", n)
	}
	ts.remove(b)
	if ts.find("", "b") != nil || sh.m[hb] != a {
		t.Error("removing b's bucket did not remove it alone")
	}
}
