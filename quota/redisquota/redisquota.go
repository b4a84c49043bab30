// Package redisquota is a quota.Store in Redis: the tenants' GCRAs and the
// instances' heartbeats that several sluice instances (or Go services
// using quota.Limiter) share.
//
// Each lease is one Lua script on one key, run on the server's clock (so
// the instances' clocks need not agree), and a Limiter's leases of one
// interval go in one pipeline: one round trip per interval, whatever the
// tenants. A key lives as long as its tenant's arrival time is ahead of
// now, no longer: 100,000 tenants that came once leave nothing behind.
// Heartbeats are a sorted set of instance ids scored by when each expires.
//
// It works against a single Redis, Redis Cluster (each script touches one
// key) and a Sentinel-managed primary, through github.com/redis/go-redis/v9.
package redisquota

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluicehq/sluice/quota"
)

//go:embed lease.lua
var leaseSrc string

//go:embed heartbeat.lua
var heartbeatSrc string

var (
	leaseScript     = redis.NewScript(leaseSrc)
	heartbeatScript = redis.NewScript(heartbeatSrc)
)

// DefaultPrefix begins every key when Options.Prefix is empty.
const DefaultPrefix = "sluice:quota:"

// Options configure a Store. URL or Client is required.
type Options struct {
	// URL names the Redis:
	//
	//	redis://[user:password@]host:port/db    one server (rediss:// for TLS)
	//	redis+cluster://host:port?addr=host2:port   Redis Cluster (rediss+cluster://)
	//	redis+sentinel://host:port?master_name=NAME&addr=...   a Sentinel's primary (rediss+sentinel://)
	//
	// with go-redis's query parameters (dial_timeout, pool_size, ...).
	URL string
	// Client, when set, is used instead of URL; Close leaves it open.
	Client redis.UniversalClient
	// Prefix begins every key. Zero means DefaultPrefix. Instances share
	// quotas exactly when they share the Redis and the prefix.
	Prefix string
}

// Store is a quota.Store in Redis. Safe for concurrent use.
type Store struct {
	c      redis.UniversalClient
	own    bool
	prefix string
}

var _ quota.Store = (*Store)(nil)

// New connects lazily (the first call dials): a Redis not there yet is a
// failed lease, which a quota.Limiter fails open through, not an error here.
func New(o Options) (*Store, error) {
	s := &Store{c: o.Client, prefix: o.Prefix}
	if s.prefix == "" {
		s.prefix = DefaultPrefix
	}
	if s.c == nil {
		c, err := Dial(o.URL)
		if err != nil {
			return nil, err
		}
		s.c, s.own = c, true
	}
	return s, nil
}

// Dial returns a client for url (see Options.URL), without connecting.
// Calls are bounded by their context's deadline and never retried: a
// lease sent twice would be granted twice, and the next interval asks
// again anyway.
func Dial(url string) (redis.UniversalClient, error) {
	scheme, rest, ok := strings.Cut(url, "://")
	if !ok {
		return nil, fmt.Errorf("redisquota: URL %q: want redis://, rediss://, redis+cluster:// or redis+sentinel://", url)
	}
	base, kind, _ := strings.Cut(scheme, "+")
	if base != "redis" && base != "rediss" {
		return nil, fmt.Errorf("redisquota: URL %q: scheme %q: want redis or rediss", url, scheme)
	}
	plain := base + "://" + rest
	switch kind {
	case "":
		o, err := redis.ParseURL(plain)
		if err != nil {
			return nil, fmt.Errorf("redisquota: URL: %w", err)
		}
		o.ContextTimeoutEnabled, o.MaxRetries = true, -1
		return redis.NewClient(o), nil
	case "cluster":
		o, err := redis.ParseClusterURL(plain)
		if err != nil {
			return nil, fmt.Errorf("redisquota: URL: %w", err)
		}
		o.ContextTimeoutEnabled, o.MaxRetries = true, -1
		return redis.NewClusterClient(o), nil
	case "sentinel":
		o, err := redis.ParseFailoverURL(plain)
		if err != nil {
			return nil, fmt.Errorf("redisquota: URL: %w", err)
		}
		o.ContextTimeoutEnabled, o.MaxRetries = true, -1
		return redis.NewFailoverClient(o), nil
	}
	return nil, fmt.Errorf("redisquota: URL %q: scheme %q: want redis, redis+cluster or redis+sentinel", url, scheme)
}

// Close closes the client New dialled (not one passed in Options.Client).
func (s *Store) Close() error {
	if s.own {
		return s.c.Close()
	}
	return nil
}

// Key is the Redis key of a tenant's GCRA under a quota.
func (s *Store) Key(q, tenant string) string { return s.prefix + q + ":" + tenant }

// Lease implements quota.Store: one pipeline of one script per lease. A
// server that lost its scripts (restarted, SCRIPT FLUSH) has them loaded
// again and the pipeline sent once more.
func (s *Store) Lease(ctx context.Context, leases []quota.Lease) error {
	cmds, err := s.lease(ctx, leases)
	if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
		if err := leaseScript.Load(ctx, s.c).Err(); err != nil {
			return fmt.Errorf("redisquota: load the lease script: %w", err)
		}
		cmds, err = s.lease(ctx, leases)
	}
	if err != nil {
		return fmt.Errorf("redisquota: lease: %w", err)
	}
	for i, c := range cmds {
		v, err := c.Int64Slice()
		if err != nil || len(v) != 2 {
			return fmt.Errorf("redisquota: lease of %q: answer %v: %w", leases[i].Tenant, c.Val(), errors.Join(err, errBadAnswer))
		}
		leases[i].Granted, leases[i].Wait = v[0], time.Duration(v[1])*time.Microsecond
	}
	return nil
}

var errBadAnswer = errors.New("redisquota: the script's answer is not {granted, wait}")

func (s *Store) lease(ctx context.Context, leases []quota.Lease) ([]*redis.Cmd, error) {
	cmds := make([]*redis.Cmd, len(leases))
	_, err := s.c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range leases {
			l := &leases[i]
			period := 1e6 / l.Rate // microseconds per token
			cmds[i] = leaseScript.EvalSha(ctx, p, []string{s.Key(l.Quota, l.Tenant)},
				strconvFloat(period), l.Burst, l.Want)
		}
		return nil
	})
	return cmds, err
}

// strconvFloat formats f for a script's tonumber, exactly.
func strconvFloat(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return fmt.Sprintf("%.0f", f)
	}
	return fmt.Sprintf("%.17g", f)
}

// Heartbeat implements quota.Store.
func (s *Store) Heartbeat(ctx context.Context, id string, ttl time.Duration) (int, error) {
	n, err := heartbeatScript.Run(ctx, s.c, []string{s.prefix + "instances"}, id, ttl.Milliseconds()).Int()
	if err != nil {
		return 0, fmt.Errorf("redisquota: heartbeat: %w", err)
	}
	return n, nil
}

// SilenceClientLog discards go-redis's own log lines (one to stderr for
// each failed dial while Redis is gone), which go through a process-wide
// logger: for a process that reports the store's failures itself, as
// quota.Limiter does, once. It changes that logger for every go-redis
// client of the process.
func SilenceClientLog() { redis.SetLogger(quietLogger{}) }

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
