package redisquota_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/testutil"
	"github.com/sluicehq/sluice/quota"
	"github.com/sluicehq/sluice/quota/redisquota"
)

func newStore(t testing.TB, url string) *redisquota.Store {
	t.Helper()
	s, err := redisquota.New(redisquota.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func client(t testing.TB, r *testutil.Redis) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: r.Addr})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestLease: the script grants the burst, then nothing until the rate has
// brought more, and says when; as quota.GCRA does.
func TestLease(t *testing.T) {
	r := testutil.StartRedis(t)
	s := newStore(t, r.URL())
	ctx := context.Background()
	ls := []quota.Lease{
		{Tenant: "a", Rate: 10, Burst: 5, Want: 8},
		{Tenant: "b", Rate: 10, Burst: 5, Want: 3},
		{Quota: "route1", Tenant: "a", Rate: 10, Burst: 5, Want: 5},
	}
	if err := s.Lease(ctx, ls); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int64{5, 3, 5} {
		if ls[i].Granted != want {
			t.Errorf("lease %d (%s/%s): granted %d; want %d", i, ls[i].Quota, ls[i].Tenant, ls[i].Granted, want)
		}
	}
	if w := ls[0].Wait; w <= 0 || w > 100*time.Millisecond {
		t.Errorf("wait after the burst = %v; want in (0, 100ms] (one token at 10/s)", w)
	}
	again := []quota.Lease{{Tenant: "a", Rate: 10, Burst: 5, Want: 1}}
	if err := s.Lease(ctx, again); err != nil {
		t.Fatal(err)
	}
	if again[0].Granted != 0 {
		t.Errorf("lease right after the burst: granted %d; want 0", again[0].Granted)
	}
	ttl, err := client(t, r).PTTL(ctx, s.Key("", "a")).Result()
	if err != nil || ttl <= 0 || ttl > 600*time.Millisecond {
		t.Errorf("PTTL of the tenant's key = %v, %v; want (0, 600ms]: kept while its arrival time is ahead", ttl, err)
	}
}

// TestKeysExpire: tenants that came once leave no key behind.
func TestKeysExpire(t *testing.T) {
	r := testutil.StartRedis(t)
	s := newStore(t, r.URL())
	ctx := context.Background()
	ls := make([]quota.Lease, 1000)
	for i := range ls {
		ls[i] = quota.Lease{Tenant: strings.Repeat("x", i%100) + string(rune('a'+i%26)) + time.Duration(i).String(), Rate: 100, Burst: 10, Want: 10}
	}
	if err := s.Lease(ctx, ls); err != nil {
		t.Fatal(err)
	}
	c := client(t, r)
	if n, _ := c.DBSize(ctx).Result(); n != 1000 {
		t.Fatalf("DBSIZE = %d after 1000 tenants' leases; want 1000", n)
	}
	// Each key lives 100 ms (10 tokens at 100/s): poll, bounded, for
	// Redis's own expiry.
	deadline := time.Now().Add(5 * time.Second)
	for {
		n, err := c.DBSize(ctx).Result()
		if err == nil && n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("DBSIZE = %d, %v 5 s later; want 0", n, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func TestHeartbeat(t *testing.T) {
	r := testutil.StartRedis(t)
	s := newStore(t, r.URL())
	ctx := context.Background()
	for i, id := range []string{"a", "b", "c", "a"} {
		n, err := s.Heartbeat(ctx, id, time.Minute)
		if want := min(i+1, 3); err != nil || n != want {
			t.Fatalf("heartbeat %d (%s) = %d, %v; want %d", i, id, n, err, want)
		}
	}
	if _, err := s.Heartbeat(ctx, "short", time.Millisecond); err != nil {
		t.Fatal(err)
	}
	ttl, err := client(t, r).PTTL(ctx, redisquota.DefaultPrefix+"instances").Result()
	if err != nil || ttl <= 0 {
		t.Errorf("PTTL of the instances' set = %v, %v; want it to expire", ttl, err)
	}
}

// TestScriptsReloaded: a Redis that lost its scripts (a restart, SCRIPT
// FLUSH) gets them again.
func TestScriptsReloaded(t *testing.T) {
	r := testutil.StartRedis(t)
	s := newStore(t, r.URL())
	ctx := context.Background()
	ls := []quota.Lease{{Tenant: "a", Rate: 1, Burst: 1, Want: 1}}
	if err := s.Lease(ctx, ls); err != nil {
		t.Fatal(err)
	}
	if err := client(t, r).ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	ls = []quota.Lease{{Tenant: "b", Rate: 1, Burst: 1, Want: 1}}
	if err := s.Lease(ctx, ls); err != nil || ls[0].Granted != 1 {
		t.Errorf("lease after SCRIPT FLUSH = %d, %v; want 1, nil", ls[0].Granted, err)
	}
}

func TestDialURLs(t *testing.T) {
	for _, url := range []string{"redis://127.0.0.1:6379/0", "rediss://u:p@example.com:6380/1", "redis+cluster://127.0.0.1:7000?addr=127.0.0.1:7001", "redis+sentinel://127.0.0.1:26379?master_name=mymaster"} {
		c, err := redisquota.Dial(url)
		if err != nil {
			t.Errorf("Dial(%q) = %v; want a client", url, err)
			continue
		}
		c.Close()
	}
	for _, url := range []string{"", "127.0.0.1:6379", "http://127.0.0.1", "redis+mesh://x", "redis://:bad port"} {
		if c, err := redisquota.Dial(url); err == nil || !strings.HasPrefix(err.Error(), "redisquota: ") {
			t.Errorf("Dial(%q) = %v; want a redisquota error", url, err)
			if c != nil {
				c.Close()
			}
		}
	}
}

// TestOutageAndReturn: a Limiter over a Redis that stops and comes back.
// While it is gone no Take waits for it, the limiter fails open and says
// so; within 5 s of its return the store's rate holds again.
func TestOutageAndReturn(t *testing.T) {
	r := testutil.StartRedis(t)
	store := newStore(t, r.URL())
	l, err := quota.New(quota.Options{Store: store, Limit: quota.Limit{Rate: 20, Burst: 20}, Instances: 2, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	defer func() { cancel(); <-done }()

	// admitted sends 100 requests a second for d and counts those
	// admitted; the slowest Take is what a request waited for the quota.
	var slowest time.Duration
	admitted := func(d time.Duration) int {
		n := 0
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for end := time.Now().Add(d); time.Now().Before(end); <-tick.C {
			start := time.Now()
			ok, _ := l.Take(admission.Request{Tenant: "t"})
			slowest = max(slowest, time.Since(start))
			if ok {
				n++
			}
		}
		return n
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 5 s; Stats() = %+v", what, l.Stats())
			}
		}
	}
	admitted(time.Second) // the burst
	if n := admitted(2 * time.Second); n < 30 || n > 50 {
		t.Errorf("Redis up: %d admitted in 2 s at rate 20; want about 40", n)
	}
	r.Stop()
	waitFor("store down in Stats", func() bool { return !l.Stats().StoreUp })
	// Failing open: this instance's share, 20 / 2 instances.
	if n := admitted(2 * time.Second); n < 14 || n > 26 {
		t.Errorf("Redis gone: %d admitted in 2 s; want about 20 (rate 20 / 2 instances)", n)
	}
	r.Start()
	back := time.Now()
	waitFor("store up again in Stats", func() bool { return l.Stats().StoreUp })
	t.Logf("store up again %v after Redis's return", time.Since(back))
	admitted(time.Second)
	if n := admitted(2 * time.Second); n < 30 || n > 50 {
		t.Errorf("Redis back: %d admitted in 2 s at rate 20; want about 40", n)
	}
	if slowest > 50*time.Millisecond {
		t.Errorf("slowest Take %v; want no request to wait on Redis", slowest)
	}
}

// FuzzKey: any two tenants, under any two quota names, lease from keys of
// their own in Redis. The seeds run in every `go test` (with redis-server).
func FuzzKey(f *testing.F) {
	f.Add("", "a", "", "b")
	f.Add("", "a:b", "a", "b")
	f.Add("routes[1]", "{x}", "routes[1]", "{x}\x00")
	f.Add("q", "é\xff", "", "q:é\xff")
	r := testutil.StartRedis(f)
	s := newStore(f, r.URL())
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, q1, t1, q2, t2 string) {
		if strings.Contains(q1, ":") || strings.Contains(q2, ":") || (q1 == q2 && t1 == t2) {
			t.Skip("quota names have no ':'; the tenants must differ")
		}
		if s.Key(q1, t1) == s.Key(q2, t2) {
			t.Fatalf("Key(%q, %q) = Key(%q, %q)", q1, t1, q2, t2)
		}
		// A rate of one a day: the burst is all there is.
		const day = 1.0 / 86400
		ls := []quota.Lease{{Quota: q1, Tenant: t1, Rate: day, Burst: 1, Want: 1}}
		if err := s.Lease(ctx, ls); err != nil {
			t.Fatal(err)
		}
		first := ls[0].Granted
		ls = []quota.Lease{{Quota: q2, Tenant: t2, Rate: day, Burst: 1, Want: 1}}
		if err := s.Lease(ctx, ls); err != nil {
			t.Fatal(err)
		}
		if first == 1 && ls[0].Granted != 1 {
			t.Errorf("(%q, %q) was refused after (%q, %q) took its burst", q2, t2, q1, t1)
		}
		client(t, r).Del(ctx, s.Key(q1, t1), s.Key(q2, t2))
	})
}
