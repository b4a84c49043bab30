package quota

import (
	"context"
	"math"
	"sync"
	"time"
)

// Store is the state several Limiters share: a GCRA per (quota, tenant)
// that tokens are leased from, and the instances' heartbeats. Its methods
// are called from one goroutine per Limiter (Run), never on a request's
// path; they must honour ctx's deadline.
type Store interface {
	// Lease grants, for each lease, up to Want tokens of its key's GCRA
	// (Rate per second, Burst at once), setting Granted and Wait. A non-nil
	// error means the store could not be asked (some leases may have been
	// granted nonetheless, and are lost).
	Lease(ctx context.Context, leases []Lease) error
	// Heartbeat records instance id as alive for ttl and returns how many
	// instances are alive, id included.
	Heartbeat(ctx context.Context, id string, ttl time.Duration) (instances int, err error)
}

// Lease is one request for tokens in a Store.Lease batch.
type Lease struct {
	Quota  string // the limit's name (admission.Request.Quota)
	Tenant string
	Rate   float64 // tokens per second, > 0
	Burst  int64   // tokens at once, >= 1
	Want   int64   // tokens asked for, >= 1

	// Set by the store.
	Granted int64         // tokens granted, 0..Want
	Wait    time.Duration // when Granted < Want: until the next token
}

// GCRA grants up to want tokens of a GCRA whose theoretical arrival time
// is tat, at now (both in the same unit, any epoch), with an emission
// interval of period per token and burst tokens at once. It returns the
// tokens granted, the new arrival time and, when fewer than want were
// granted, how long until the next token. It is the one statement of the
// lease semantics every Store implements (quota/redisquota's script
// follows it line by line).
func GCRA(tat, now, period float64, burst, want int64) (granted int64, next, wait float64) {
	tat = math.Max(tat, now)
	avail := math.Floor((now + float64(burst)*period - tat) / period)
	granted = max(min(want, int64(avail)), 0)
	tat += float64(granted) * period
	if granted < want {
		wait = math.Max(tat+period-float64(burst)*period-now, 0)
	}
	return granted, tat, wait
}

// MemoryStore is a Store in the process's memory: for one instance alone,
// and the reference the Redis store is tested against. The zero value is
// not ready: use NewMemoryStore. Safe for concurrent use. Its entries
// expire as Redis's do: an arrival time in the past is deleted on a later
// sweep, and so are heartbeats past their ttl.
type MemoryStore struct {
	mu      sync.Mutex
	epoch   time.Time
	tat     map[memKey]float64 // seconds since epoch
	beats   map[string]time.Time
	sweepAt int
}

type memKey struct{ quota, tenant string }

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore {
	return &MemoryStore{epoch: time.Now(), tat: make(map[memKey]float64), beats: make(map[string]time.Time), sweepAt: minSweep}
}

const minSweep = 1024

// Lease implements Store.
func (s *MemoryStore) Lease(ctx context.Context, leases []Lease) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Since(s.epoch).Seconds()
	for i := range leases {
		l := &leases[i]
		k := memKey{l.Quota, l.Tenant}
		g, tat, wait := GCRA(s.tat[k], now, 1/l.Rate, l.Burst, l.Want)
		if tat > now {
			s.tat[k] = tat
		}
		l.Granted, l.Wait = g, time.Duration(wait*float64(time.Second))
	}
	if len(s.tat) >= s.sweepAt {
		for k, tat := range s.tat {
			if tat <= now {
				delete(s.tat, k)
			}
		}
		s.sweepAt = max(minSweep, 2*len(s.tat))
	}
	return nil
}

// Heartbeat implements Store.
func (s *MemoryStore) Heartbeat(ctx context.Context, id string, ttl time.Duration) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	s.beats[id] = now.Add(ttl)
	for k, until := range s.beats {
		if !until.After(now) {
			delete(s.beats, k)
		}
	}
	return len(s.beats), nil
}

// Len returns the number of tenants' entries held, for tests of the bound.
func (s *MemoryStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.tat)
}
