package quota

import (
	"context"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// maxBatch bounds the leases of one Store.Lease call: a pipeline of that
// many scripts keeps Redis busy for a few milliseconds at most.
const maxBatch = 1000

// Run leases tokens from the store every Interval and keeps this
// instance's heartbeat, until ctx is done; it then returns nil, having
// waited for the heartbeat's goroutine, the one it starts. Call it once,
// on a goroutine of its own. No request waits for it: requests it has not
// leased for yet are admitted on credit, or refused.
func (l *Limiter) Run(ctx context.Context) error {
	r := leaser{l: l}
	var wg sync.WaitGroup
	// Heartbeats on a goroutine of their own: a store that hangs makes
	// each wait its Timeout, which must not hold up the leases (nor the
	// local shares handed out while the store fails).
	wg.Go(func() {
		tick := time.NewTicker(l.o.Heartbeat)
		defer tick.Stop()
		for {
			r.heartbeat(ctx)
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	})
	defer wg.Wait()
	tick := time.NewTicker(l.o.Interval)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		now := time.Now()
		r.lease(ctx, now, now.Sub(last))
		last = now
	}
}

// leaser is Run's state: scratch space reused from one lease to the next,
// owned by the lease loop, and what the heartbeat tells it.
type leaser struct {
	l      *Limiter
	leases []Lease
	refs   []*bucket
	idle   []*bucket
	probe  atomic.Bool // a heartbeat went through while the store was failing
}

// heartbeat counts this instance in the store, and the instances there
// (unless Options.Instances fixes them). It also tells, with no tenant
// asking, whether the store answers.
func (r *leaser) heartbeat(ctx context.Context) {
	l := r.l
	cctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
	n, err := l.o.Store.Heartbeat(cctx, l.o.ID, 3*l.o.Heartbeat)
	cancel()
	if err != nil {
		r.failed(ctx, err)
		return
	}
	// Leases, not heartbeats, say the store is back: the next lease asks
	// it.
	r.probe.Store(l.storeDown.Load())
	if l.o.Instances == 0 {
		l.instances.Store(int64(max(n, 1)))
		l.setInstances(int64(max(n, 1)))
	}
}

// lease collects each tracked tenant's demand since the last lease, asks
// the store for what they need, and hands the tokens to their buckets.
// dt is the time since the last lease.
func (r *leaser) lease(ctx context.Context, now time.Time, dt time.Duration) {
	l := r.l
	n := l.instanceCount()
	idleAfter := int(l.o.IdleTimeout / l.o.Interval)
	r.leases, r.refs, r.idle = r.leases[:0], r.refs[:0], r.idle[:0]
	l.t.each(func(b *bucket) {
		if want := r.demand(b, n, idleAfter, dt); want > 0 {
			r.leases = append(r.leases, Lease{
				Quota: b.key.quota, Tenant: b.key.tenant,
				Rate: b.lim.Rate, Burst: storeBurst(b.lim, n), Want: want,
			})
			r.refs = append(r.refs, b)
		}
	})
	for _, b := range r.idle {
		l.t.remove(b)
	}
	since := now.Sub(l.epoch)
	// While the store fails, it is asked again only once a heartbeat has
	// gone through (probe): a store that hangs costs each lease its
	// Timeout, and the tenants' local shares would come that much later.
	probe := r.probe.Swap(false)
	if probe && len(r.leases) == 0 {
		r.recovered() // nothing to lease: the heartbeat is the evidence
	}
	for start := 0; start < len(r.leases); start += maxBatch {
		end := min(start+maxBatch, len(r.leases))
		batch, refs := r.leases[start:end], r.refs[start:end]
		if !l.storeDown.Load() || (start == 0 && probe) {
			cctx, cancel := context.WithTimeout(ctx, l.o.Timeout)
			err := l.o.Store.Lease(cctx, batch)
			cancel()
			if err == nil {
				r.recovered()
				r.grant(batch, refs, since)
				continue
			}
			r.failed(ctx, err)
		}
		r.grantLocally(batch, refs, n, dt, since)
	}
}

// demand returns how many tokens b should ask for, and takes its
// counts since the last lease, dt ago. A tenant idle for idleAfter leases
// is marked to be forgotten.
func (r *leaser) demand(b *bucket, n int64, idleAfter int, dt time.Duration) int64 {
	used, denied := b.used.Swap(0), b.denied.Swap(0)
	r.l.allowed.Add(uint64(used))
	r.l.rejected.Add(uint64(denied))
	asked := used + denied
	if asked == 0 {
		b.idle++
		// Tokens a whole interval left unused are given up, but for a
		// credit's worth: kept, they would add to the tenant's next burst
		// (the store's burst leaves room for that much).
		c := b.lim.credit.Load()
		for v := b.avail.Load(); v > c && !b.avail.CompareAndSwap(v, c); v = b.avail.Load() {
		}
	} else {
		b.idle = 0
	}
	avail := b.avail.Load()
	if b.idle >= idleAfter && avail >= 0 {
		r.idle = append(r.idle, b)
		return 0
	}
	// As many as were asked for since the last lease, bounded by what the
	// store could grant by the next: the rate over two intervals (or two
	// of the time the last one took, when leases come late) and the burst.
	// A debt (avail < 0) is paid first.
	ahead := int64(math.Ceil(2*b.lim.Rate*max(dt, r.l.o.Interval).Seconds())) + storeBurst(b.lim, n)
	return min(asked, ahead) - avail
}

// storeBurst is the burst a limit has in the store: its own, less what
// every instance may admit before asking the store: its credit, and as
// many tokens kept from an earlier lease.
func storeBurst(s *limitState, n int64) int64 {
	return max(1, int64(s.Burst)-2*n*s.credit.Load())
}

func (r *leaser) grant(batch []Lease, refs []*bucket, since time.Duration) {
	for i := range batch {
		ls, b := &batch[i], refs[i]
		avail := b.avail.Add(ls.Granted)
		wait := ls.Wait
		if ls.Granted == ls.Want {
			wait = 0
		}
		b.retryAt.Store(int64(r.next(b, avail, since, wait, b.lim.Rate)))
		b.local = 0
	}
}

// next is when b's next request would be admitted, in time since the
// epoch, now that it holds avail tokens: once the tokens it lacks have
// come at rate, the first of them after wait, and been leased (up to an
// interval later).
func (r *leaser) next(b *bucket, avail int64, since, wait time.Duration, rate float64) time.Duration {
	lacks := 1 - b.lim.credit.Load() - avail // a request fits when avail-1 >= -credit
	if lacks <= 0 {
		return since
	}
	return since + wait + time.Duration(float64(lacks-1)/rate*float64(time.Second)) + r.l.o.Interval
}

// grantLocally hands out, while the store fails, each tenant's local share
// of its rate: rate / instances, at most burst / instances at once.
func (r *leaser) grantLocally(batch []Lease, refs []*bucket, n int64, dt time.Duration, since time.Duration) {
	for i := range batch {
		ls, b := &batch[i], refs[i]
		share := b.lim.Rate / float64(n)
		b.local += share * dt.Seconds()
		g := min(ls.Want, int64(b.local))
		// What is not taken is kept up to a local share of the burst.
		b.local = math.Min(b.local-float64(g), math.Max(1, float64(b.lim.Burst)/float64(n)))
		avail := b.avail.Add(g)
		wait := time.Duration((1 - b.local) / share * float64(time.Second))
		b.retryAt.Store(int64(r.next(b, avail, since, wait, share)))
	}
}

// failed counts a failed store call; the first after a success is logged.
func (r *leaser) failed(ctx context.Context, err error) {
	l := r.l
	l.storeErrors.Add(1)
	if !l.storeDown.Swap(true) {
		l.o.Logger.LogAttrs(ctx, slog.LevelWarn, "quota: store failing; each instance allows its share of each tenant's rate until it is back",
			slog.Int64("instances", l.instanceCount()), slog.Any("error", err))
	}
}

func (r *leaser) recovered() {
	l := r.l
	if l.storeDown.Swap(false) {
		l.o.Logger.LogAttrs(context.Background(), slog.LevelInfo, "quota: store back; tenants' rates are shared again")
	}
}
