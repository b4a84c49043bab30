package limit_test

import (
	"math/rand/v2"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// cpuModel is a CPU-bound service: Cores cores, each request needing
// Service of CPU. At concurrency n the requests share the cores, so a
// request holds its slot for Service x max(1, n/Cores). The knee, where more
// concurrency stops buying throughput, is at n = Cores.
type cpuModel struct {
	Cores   float64
	Service time.Duration
}

func (m cpuModel) rtt(n int) time.Duration {
	return time.Duration(float64(m.Service) * max(1, float64(n)/m.Cores))
}

// sim drives an Algorithm with synthetic windows from a cpuModel.
type sim struct {
	alg   limit.Algorithm
	model cpuModel
	// Offered is the concurrency the clients would use if the limit let
	// them: above the knee it is overload, below Limit/2 app-limited.
	Offered int
	// Noise, when set, returns a factor with mean 1 that multiplies each
	// sample's RTT; uniform and exponential below.
	Noise func(*rand.Rand) float64
	// Samples is how many requests complete in a window; 0 means 50.
	Samples int
	// Drops is how many more requests fail for overload in each window.
	Drops int
	rng   *rand.Rand
	now   time.Time
}

// uniform returns noise uniform in [1-j, 1+j].
func uniform(j float64) func(*rand.Rand) float64 {
	return func(r *rand.Rand) float64 { return 1 + j*(2*r.Float64()-1) }
}

// exponential is noise with a coefficient of variation of 1: the RTT
// spread of a service whose requests vary a lot in cost.
func exponential(r *rand.Rand) float64 { return r.ExpFloat64() }

func newSim(alg limit.Algorithm, m cpuModel, offered int) *sim {
	return &sim{
		alg:     alg,
		model:   m,
		Offered: offered,
		rng:     rand.New(rand.NewPCG(1, 2)),
		now:     time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
	}
}

// window runs one sample window at the current limit and returns the limit
// after Tick.
func (s *sim) window() int {
	conc := min(s.alg.Limit(), s.Offered)
	rtt := s.model.rtt(conc)
	n := s.Samples
	if n == 0 {
		n = 50
	}
	for range n {
		d := rtt
		if s.Noise != nil {
			d = time.Duration(float64(rtt) * s.Noise(s.rng))
		}
		s.now = s.now.Add(time.Millisecond)
		s.alg.Observe(limit.Sample{Now: s.now, RTT: d, Inflight: conc})
	}
	for range s.Drops {
		s.alg.Observe(limit.Sample{Now: s.now, RTT: time.Second, Inflight: conc, Dropped: true})
	}
	return s.alg.Tick(limit.Window{Now: s.now, Saturation: -1, Inflight: conc, PeakInflight: conc})
}

// run runs n windows and returns the limits after each.
func (s *sim) run(n int) []int {
	ls := make([]int, n)
	for i := range ls {
		ls[i] = s.window()
	}
	return ls
}

// gradient2 is Netflix's Gradient2Limit as the reference describes it, for
// comparison: long RTT = exponential average over 600 windows, g =
// clamp(1.5 long/short, 0.5, 1), L' = 0.8 L + 0.2 (L g + 4), hold while
// inflight < L/2. Not safe for concurrent use.
type gradient2 struct {
	limit    float64
	long     float64
	updates  int
	n        int
	sum      float64
	inflight int
}

func (g *gradient2) Limit() int { return int(g.limit) }

func (g *gradient2) Observe(s limit.Sample) int {
	g.n++
	g.sum += float64(s.RTT)
	g.inflight = max(g.inflight, s.Inflight)
	return g.Limit()
}

func (g *gradient2) Tick(limit.Window) int {
	if g.n == 0 {
		return g.Limit()
	}
	short := g.sum / float64(g.n)
	inflight := g.inflight
	g.n, g.sum, g.inflight = 0, 0, 0
	g.updates++
	if g.updates <= 10 { // warm-up: plain average
		g.long += (short - g.long) / float64(g.updates)
	} else {
		g.long += (short - g.long) * 2 / 601
	}
	if g.long/short > 2 {
		g.long *= 0.95
	}
	if float64(inflight) < g.limit/2 {
		return g.Limit()
	}
	grad := max(0.5, min(1, 1.5*g.long/short))
	g.limit = min(1000, max(20, 0.8*g.limit+0.2*(g.limit*grad+4)))
	return g.Limit()
}
