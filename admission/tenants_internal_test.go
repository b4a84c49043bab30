package admission

import (
	"strconv"
	"testing"

	"github.com/sluicehq/sluice/limit"
)

// The memory of tenants stays within its bound whatever keys arrive, and a
// tenant served steadily is never forgotten.
func TestTenantMemoryBounded(t *testing.T) {
	for _, max := range []int{1, 2, 9, 1000} {
		var m tenantMemory
		m.init(max)
		for i := range 100_000 {
			m.add("k" + strconv.Itoa(i))
			if i%3 == 0 {
				m.add("steady")
			}
			if n := m.len(); n > max && n > 2 {
				t.Fatalf("max %d: got %d tenants remembered after %d keys, want at most %d", max, n, i+1, max)
			}
		}
		if max >= 6 && !m.has("steady") {
			t.Errorf("max %d: a tenant served every third dispatch was forgotten", max)
		}
		if !m.has("k99999") {
			t.Errorf("max %d: the tenant served last is not remembered", max)
		}
	}
}

// Options.MaxTrackedTenants is the queue's bound.
func TestControllerMaxTrackedTenants(t *testing.T) {
	c, err := New(Options{Limit: limit.NewFixed(1), QueueSize: 10, MaxTrackedTenants: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.q.known.gen != 4 {
		t.Errorf("got a generation of %d tenants, want 4 (half of 8)", c.q.known.gen)
	}
	if _, err := New(Options{Limit: limit.NewFixed(1), MaxTrackedTenants: -1}); err == nil {
		t.Error("MaxTrackedTenants -1: got no error, want one")
	}
}

// backlog queues n requests of tenant in q and serves them all, so that
// the class's virtual time moves on and tenant is known.
func backlog(q *fairQueue, tenant string, n int) {
	for range n {
		q.push(&waiter{req: Request{Tenant: tenant}, cost: 1})
	}
	for range n {
		q.dispatched(q.front())
	}
}

// Fresh tenant keys get no head start over a tenant that has been waiting:
// its queued requests are served before theirs.
func TestFairQueueFreshKeysNoHeadStart(t *testing.T) {
	q := newFairQueue(100, 0, 0, nil)
	backlog(q, "steady", 20)
	s1 := &waiter{req: Request{Tenant: "steady"}, cost: 1}
	s2 := &waiter{req: Request{Tenant: "steady"}, cost: 1}
	q.push(s1)
	q.push(s2)
	for i := range 5 {
		q.push(&waiter{req: Request{Tenant: "fresh" + strconv.Itoa(i)}, cost: 1})
	}
	for i, want := range []*waiter{s1, s2} {
		got := q.front()
		if got != want {
			t.Fatalf("dispatch %d: got tenant %q, want steady's waiting request", i, got.req.Tenant)
		}
		q.dispatched(got)
	}
	if n := q.tenants(); n != 1 {
		t.Errorf("got %d flows for five fresh keys, want 1 (the newcomers')", n)
	}
}

// At a full queue a fresh key is refused (429) rather than displacing a
// tenant that has been waiting: the newcomers' pooled backlog is the
// heaviest, not the steady tenant's.
func TestFairQueueFreshKeysFullQueue(t *testing.T) {
	t.Run("fresh key refused", func(t *testing.T) {
		q := newFairQueue(5, 0, 0, nil)
		backlog(q, "steady", 1)
		s1 := &waiter{req: Request{Tenant: "steady"}, cost: 1}
		s2 := &waiter{req: Request{Tenant: "steady"}, cost: 1}
		q.push(s1)
		q.push(s2)
		for i := range 3 {
			q.push(&waiter{req: Request{Tenant: "fresh" + strconv.Itoa(i)}, cost: 1})
		}
		victim, _, refused := q.push(&waiter{req: Request{Tenant: "fresh9"}, cost: 1})
		if victim != nil {
			t.Errorf("got victim of tenant %q, want none", victim.req.Tenant)
		}
		if refused != ReasonTenant {
			t.Errorf("got refusal %v, want %v (the newcomers are over their share)", refused, ReasonTenant)
		}
		if s1.flow == nil || s2.flow == nil {
			t.Error("the steady tenant lost a queued request")
		}
	})
	t.Run("a known tenant displaces a newcomer", func(t *testing.T) {
		q := newFairQueue(4, 0, 0, nil)
		backlog(q, "steady", 1)
		q.push(&waiter{req: Request{Tenant: "steady"}, cost: 1})
		for i := range 3 {
			q.push(&waiter{req: Request{Tenant: "fresh" + strconv.Itoa(i)}, cost: 1})
		}
		victim, why, refused := q.push(&waiter{req: Request{Tenant: "steady"}, cost: 1})
		if refused != ReasonNone || victim == nil || victim.req.Tenant != "fresh2" || why != ReasonTenant {
			t.Errorf("got victim %v (%v), refused %v; want fresh2's request displaced (tenant)", victim, why, refused)
		}
	})
}

// Once served, a tenant's backlog queued with the newcomers moves to a
// flow of its own, leaving the newcomers' flow to the others.
func TestFairQueueGraduate(t *testing.T) {
	q := newFairQueue(100, 0, 0, nil)
	var flood []*waiter
	for range 10 {
		w := &waiter{req: Request{Tenant: "flood"}, cost: 1}
		q.push(w)
		flood = append(flood, w)
	}
	other := &waiter{req: Request{Tenant: "other"}, cost: 1}
	q.push(other)
	q.dispatched(q.front()) // flood's first: flood is known now
	for _, w := range flood[1:] {
		if w.flow == nil || w.flow.pooled {
			t.Fatal("flood's backlog stayed with the newcomers after it was served")
		}
	}
	if got := q.front(); got != other && got.flow.pooled {
		t.Errorf("got %q next from the newcomers, want other", got.req.Tenant)
	}
	served := map[string]int{}
	for range 4 {
		w := q.front()
		served[w.req.Tenant]++
		q.dispatched(w)
	}
	if served["other"] != 1 {
		t.Errorf("got other served %d times in 4 dispatches, want 1 (its turn among two flows)", served["other"])
	}
	if q.len() != 6 {
		t.Errorf("got %d queued, want 6", q.len())
	}
}

// A tenant with a weight, and the shared tenant "", always have their own
// flow; any other key joins it once it has been served.
func TestFairQueueKnownTenants(t *testing.T) {
	q := newFairQueue(100, 0, 0, func(t string) float64 {
		if t == "acme" {
			return 2
		}
		return 0
	})
	for _, tenant := range []string{"", "acme"} {
		w := &waiter{req: Request{Tenant: tenant}, cost: 1}
		q.push(w)
		if w.flow.pooled {
			t.Errorf("tenant %q: waits with the newcomers, want a flow of its own", tenant)
		}
		q.remove(w)
	}
	w := &waiter{req: Request{Tenant: "new"}, cost: 1}
	q.push(w)
	if !w.flow.pooled {
		t.Error("an unseen tenant: got a flow of its own, want the newcomers'")
	}
	q.dispatched(w)
	w = &waiter{req: Request{Tenant: "new"}, cost: 1}
	q.push(w)
	if w.flow.pooled {
		t.Error("a tenant once served: waits with the newcomers, want a flow of its own")
	}
}
