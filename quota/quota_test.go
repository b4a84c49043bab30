package quota_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/quota"
)

func TestGCRA(t *testing.T) {
	// period 1 s, burst 5: 5 at once, then one a second.
	tests := []struct {
		name       string
		tat, now   float64
		want       int64
		granted    int64
		next, wait float64
	}{
		{"fresh: the burst", 0, 0, 10, 5, 5, 1},
		{"fresh: less than the burst", 0, 0, 3, 3, 3, 0},
		{"exhausted", 5, 0, 1, 0, 5, 1},
		{"two seconds on: two", 5, 2, 4, 2, 7, 1},
		{"long idle: the burst, no more", 5, 100, 9, 5, 105, 1},
		{"arrival time far ahead: wait for it", 20, 0, 1, 0, 20, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, next, wait := quota.GCRA(tt.tat, tt.now, 1, 5, tt.want)
			if g != tt.granted || next != tt.next || wait != tt.wait {
				t.Errorf("GCRA(%v, %v, 1, 5, %d) = %d, %v, %v; want %d, %v, %v", tt.tat, tt.now, tt.want, g, next, wait, tt.granted, tt.next, tt.wait)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	err := quota.Options{
		Limit:     quota.Limit{Rate: -1, Burst: -2},
		Limits:    map[string]quota.Limit{"a:b": {Rate: 1}},
		Interval:  -time.Second,
		Timeout:   -time.Second,
		Instances: -1,
	}.Validate()
	for _, want := range []string{"Store is required", "Limit.Rate = -1", "Limit.Burst = -2", `Limits["a:b"]`, "Interval", "Timeout", "Instances = -1"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v; want it to name %q", err, want)
		}
	}
	if err := (quota.Options{Store: quota.NewMemoryStore(), Limit: quota.Limit{Rate: 1}}).Validate(); err != nil {
		t.Errorf("Validate() of the minimal options = %v; want nil", err)
	}
}

func newLimiter(t testing.TB, o quota.Options) *quota.Limiter {
	t.Helper()
	if o.Store == nil {
		o.Store = quota.NewMemoryStore()
	}
	l, err := quota.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// run starts l's leases until the test's end.
func run(t *testing.T, l *quota.Limiter) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = l.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
}

func TestCreditBeforeTheFirstLease(t *testing.T) {
	// One instance, burst 20: a credit of 20/4 = 5 requests before the
	// store has been asked.
	l := newLimiter(t, quota.Options{Limit: quota.Limit{Rate: 10, Burst: 20}, Instances: 1})
	req := admission.Request{Tenant: "a"}
	for i := range 5 {
		if ok, _ := l.Take(req); !ok {
			t.Fatalf("request %d refused; want the credit's 5 admitted", i)
		}
	}
	ok, retry := l.Take(req)
	if ok {
		t.Fatal("request 6 admitted; want it refused past the credit")
	}
	if retry <= 0 {
		t.Errorf("retry = %v; want > 0", retry)
	}
	if ok, _ := l.Take(admission.Request{Tenant: "b"}); !ok {
		t.Error("another tenant refused; want each tenant its own credit")
	}
}

func TestExemptPriority(t *testing.T) {
	l := newLimiter(t, quota.Options{Limit: quota.Limit{Rate: 1, Burst: 1}, Exempt: []admission.Priority{admission.CriticalPlus}})
	for i := range 100 {
		if ok, _ := l.Take(admission.Request{Tenant: "a", Priority: admission.CriticalPlus}); !ok {
			t.Fatalf("exempt request %d refused", i)
		}
	}
	l.Take(admission.Request{Tenant: "a"})
	if ok, _ := l.Take(admission.Request{Tenant: "a"}); ok {
		t.Error("second critical request admitted at rate 1, burst 1; want refused (only critical-plus is exempt)")
	}
}

// TestRateOneInstance: a tenant asking 3x its rate for 10 s gets its rate,
// plus its burst once, and a tenant under its rate gets everything.
func TestRateOneInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, quota.Options{Limit: quota.Limit{Rate: 100, Burst: 100}})
		run(t, l)
		var hot, cold int
		for step := range 1000 { // 10 ms steps
			for range 3 {
				if ok, _ := l.Take(admission.Request{Tenant: "hot"}); ok {
					hot++
				}
			}
			if step%2 == 0 {
				if ok, _ := l.Take(admission.Request{Tenant: "cold"}); ok {
					cold++
				}
			}
			time.Sleep(10 * time.Millisecond)
		}
		if lo, hi := 0.9*1000, 1.1*1000+100; float64(hot) < lo || float64(hot) > hi {
			t.Errorf("hot tenant: %d admitted in 10 s at rate 100, burst 100; want within [%v, %v]", hot, lo, hi)
		}
		if cold != 500 {
			t.Errorf("cold tenant: %d of 500 admitted at half its rate; want all", cold)
		}
		time.Sleep(200 * time.Millisecond) // a lease counts the last requests
		st := l.Stats()
		if st.Allowed != uint64(hot+cold) || st.Rejected != uint64(3000+500-hot-cold) || !st.StoreUp {
			t.Errorf("Stats() = %+v; want %d allowed, %d rejected, store up", st, hot+cold, 3000+500-hot-cold)
		}
	})
}

// TestRetryAfterIsWhenAccepted: a refused request's retry is when a
// request is admitted again.
func TestRetryAfterIsWhenAccepted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, quota.Options{Limit: quota.Limit{Rate: 1, Burst: 4}, Instances: 1})
		run(t, l)
		req := admission.Request{Tenant: "a"}
		for range 20 {
			l.Take(req)
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(200 * time.Millisecond) // a lease after the last take
		ok, retry := l.Take(req)
		if ok {
			t.Fatal("admitted after the burst; want refused")
		}
		time.Sleep(retry - 150*time.Millisecond)
		if ok, _ := l.Take(req); ok {
			t.Errorf("admitted %v before the retry (%v) said", 150*time.Millisecond, retry)
		}
		time.Sleep(300 * time.Millisecond)
		if ok, _ := l.Take(req); !ok {
			t.Errorf("refused after the retry (%v) passed; want admitted", retry)
		}
	})
}

// flaky is a store that fails while down is set.
type flaky struct {
	quota.Store
	down atomic.Bool
}

var errDown = errors.New("store down")

func (f *flaky) Lease(ctx context.Context, ls []quota.Lease) error {
	if f.down.Load() {
		return errDown
	}
	return f.Store.Lease(ctx, ls)
}

func (f *flaky) Heartbeat(ctx context.Context, id string, ttl time.Duration) (int, error) {
	if f.down.Load() {
		return 0, errDown
	}
	return f.Store.Heartbeat(ctx, id, ttl)
}

// TestStoreDownAndBack: two instances (known from their heartbeats) with
// a tenant sending 3x its rate to each. While the store fails each admits
// rate / 2 (never refusing outright, never blocking), logs it once, and
// Stats says so; once it is back, the fleet holds the rate again.
func TestStoreDownAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &flaky{Store: quota.NewMemoryStore()}
		var logs [2]bytes.Buffer
		var ls [2]*quota.Limiter
		for i := range ls {
			ls[i] = newLimiter(t, quota.Options{Store: store, Limit: quota.Limit{Rate: 100, Burst: 40}, Logger: slog.New(slog.NewTextHandler(&logs[i], nil))})
			run(t, ls[i])
		}
		phase := func(d time.Duration) int {
			n := 0
			for range d / (10 * time.Millisecond) {
				for _, l := range ls {
					for range 3 {
						if ok, _ := l.Take(admission.Request{Tenant: "t"}); ok {
							n++
						}
					}
				}
				time.Sleep(10 * time.Millisecond)
			}
			return n
		}
		phase(2 * time.Second) // heartbeats counted, the burst spent
		if got := phase(3 * time.Second); got < 270 || got > 330 {
			t.Errorf("store up: %d admitted in 3 s; want 300 ± 10%%", got)
		}
		store.down.Store(true)
		phase(time.Second)
		for i, l := range ls {
			if st := l.Stats(); st.StoreUp || st.StoreErrors == 0 || st.Instances != 2 {
				t.Errorf("instance %d, store down: Stats() = %+v; want store down, errors, 2 instances", i, st)
			}
		}
		if got := phase(3 * time.Second); got < 270 || got > 330 {
			t.Errorf("store down: %d admitted in 3 s by two instances at rate 100 / 2; want 300 ± 10%%", got)
		}
		store.down.Store(false)
		phase(time.Second) // within 5 s: at the next lease
		if got := phase(3 * time.Second); got < 270 || got > 330 {
			t.Errorf("store back: %d admitted in 3 s; want 300 ± 10%%", got)
		}
		for i := range ls {
			if !ls[i].Stats().StoreUp {
				t.Errorf("instance %d: store still down in Stats", i)
			}
			if n := strings.Count(logs[i].String(), "store failing"); n != 1 {
				t.Errorf("instance %d logged the failure %d times; want once:\n%s", i, n, logs[i].String())
			}
			if n := strings.Count(logs[i].String(), "store back"); n != 1 {
				t.Errorf("instance %d logged the return %d times; want once", i, n)
			}
		}
	})
}

// TestMemoryBounded: 100,000 distinct tenants, one request each, leave at
// most MaxTracked tracked, and nothing in the store once idle.
func TestMemoryBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := quota.NewMemoryStore()
		l := newLimiter(t, quota.Options{Store: store, Limit: quota.Limit{Rate: 10}, MaxTracked: 1000})
		run(t, l)
		peak := 0
		for i := range 100_000 {
			l.Take(admission.Request{Tenant: fmt.Sprint("t", i)})
			if i%1000 == 999 {
				peak = max(peak, l.Stats().Tenants)
				time.Sleep(10 * time.Millisecond)
			}
		}
		if peak > 1000 {
			t.Errorf("%d tenants tracked at the peak; want at most MaxTracked (1000)", peak)
		}
		time.Sleep(20 * time.Second) // idle past IdleTimeout, the store's entries expired
		if n := l.Stats().Tenants; n != 0 {
			t.Errorf("%d tenants tracked after 20 s idle; want 0", n)
		}
		// A last lease makes the store sweep its expired entries.
		for i := range 2000 {
			l.Take(admission.Request{Tenant: fmt.Sprint("u", i)})
		}
		time.Sleep(200 * time.Millisecond)
		// Expired entries are swept once the store has doubled since the
		// last sweep, as Redis's expiry is lazy too: at most twice the
		// live ones.
		if n := store.Len(); n > 2*2000 {
			t.Errorf("store holds %d entries of 102,000 tenants; want at most twice the last 2000's", n)
		}
	})
}

// hung is a store that answers nothing until its caller's deadline.
type hung struct{}

func (hung) Lease(ctx context.Context, _ []quota.Lease) error { <-ctx.Done(); return ctx.Err() }
func (hung) Heartbeat(ctx context.Context, _ string, _ time.Duration) (int, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

// TestStoreHung: a store that never answers costs each lease its Timeout,
// on the lease goroutine; no Take waits, and the tenant gets the local
// share of its rate (here all of it: one instance configured).
func TestStoreHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(t, quota.Options{Store: hung{}, Limit: quota.Limit{Rate: 50, Burst: 10}, Instances: 1, Timeout: time.Second})
		run(t, l)
		admitted := 0
		for range 500 { // 5 s
			start := time.Now()
			for range 3 {
				if ok, _ := l.Take(admission.Request{Tenant: "t"}); ok {
					admitted++
				}
			}
			if time.Since(start) != 0 {
				t.Fatal("a Take waited on the store")
			}
			time.Sleep(10 * time.Millisecond)
		}
		if st := l.Stats(); st.StoreUp || st.StoreErrors == 0 {
			t.Errorf("Stats() = %+v; want the store down", st)
		}
		// 50/s locally, from the first failed lease (1 s in), the burst
		// once at most: about 200 to 260 in 5 s.
		if admitted < 180 || admitted > 270 {
			t.Errorf("%d admitted in 5 s at 150/s asked, the store hung; want about 200-260 (rate 50, locally)", admitted)
		}
	})
}

// A request naming a limit the Limiter was not given is counted under the
// default one, with the requests that name none; a named one apart.
func TestNamedLimits(t *testing.T) {
	l := newLimiter(t, quota.Options{Limit: quota.Limit{Rate: 1, Burst: 4}, Limits: map[string]quota.Limit{"search": {Rate: 1, Burst: 4}}, Instances: 1})
	if ok, _ := l.Take(admission.Request{Tenant: "a"}); !ok {
		t.Fatal("first request refused")
	}
	if ok, _ := l.Take(admission.Request{Tenant: "a", Quota: "unknown"}); ok {
		t.Error("a request naming an unknown limit was admitted on a credit of its own; want it counted with the default's")
	}
	if ok, _ := l.Take(admission.Request{Tenant: "a", Quota: "search"}); !ok {
		t.Error("the named limit's first request refused; want it counted apart")
	}
}
