package eval

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/loadgen"
)

// Scenario names, in the order the issue lists them.
const (
	ScenarioGoodput = "goodput"       // 1: goodput vs offered load
	ScenarioDrop    = "capacity-drop" // 2: workers become 2x slower mid-run
	ScenarioRetry   = "retry-storm"   // 3: immediate retries, a trigger, recovery
	ScenarioTenants = "tenants"       // 4: a noisy tenant; a priority mix
	ScenarioHetero  = "hetero"        // 5: 90% cheap, 10% ten times dearer
	ScenarioHop     = "hop"           // proxy-hop throughput, trivial responses
	// ScenarioHopCPU ("hop-cpu", eval/hop.go): the front's own CPU per
	// request beside nginx -> HAProxy's, on trivial Node.js workers.
)

// Scenarios lists every scenario: the Go demo workers', then the Node.js
// workers' (node-react, node-async and the two on workers that report no
// saturation; see NodeWorkloads), then hop-cpu and hypernova (the real
// Hypernova, eval/hypernova.go).
func Scenarios() []string {
	return []string{ScenarioGoodput, ScenarioDrop, ScenarioRetry, ScenarioTenants, ScenarioHetero, ScenarioHop,
		ScenarioNodeReact, ScenarioNodeAsync, ScenarioNodeReactQuiet, ScenarioNodeAsyncQuiet, ScenarioHopCPU, ScenarioHypernova}
}

// Multiples are the offered loads of scenario goodput, in capacities.
func Multiples() []float64 { return []float64{0.5, 1, 2, 4, 8} }

// RepeatMultiple is the point of scenario goodput run Options.Repeats
// times (client keep-alive off), for the noise.
const RepeatMultiple = 4.0

// Run runs one scenario and writes its results.
func (s *Suite) Run(ctx context.Context, scenario string) error {
	if w, ok := NodeWorkloadFor(scenario); ok {
		return s.nodeScenario(ctx, w)
	}
	if scenario == ScenarioHopCPU {
		return s.hopCPU(ctx)
	}
	if scenario == ScenarioHypernova {
		return s.hypernova(ctx)
	}
	if s.workers == nil && slices.Contains(Scenarios(), scenario) {
		return fmt.Errorf("eval: scenario %s needs the demo workers, left out (Options.NoDemo)", scenario)
	}
	switch scenario {
	case ScenarioGoodput:
		return s.goodput(ctx)
	case ScenarioDrop:
		return s.capacityDrop(ctx)
	case ScenarioRetry:
		return s.retryStorm(ctx)
	case ScenarioTenants:
		return s.tenants(ctx)
	case ScenarioHetero:
		return s.hetero(ctx)
	case ScenarioHop:
		return s.hop(ctx)
	}
	return fmt.Errorf("eval: unknown scenario %q (want one of %s)", scenario, strings.Join(Scenarios(), ", "))
}

func kaName(keepAlive bool) string {
	if keepAlive {
		return "keepalive"
	}
	return "newconn"
}

func multipleName(m float64) string { return strconv.FormatFloat(m, 'f', -1, 64) + "x" }

// goodput is scenario 1: every setup at 0.5x to 8x of its capacity, one
// constant phase each, ?cpu=10, client timeout 1 s.
func (s *Suite) goodput(ctx context.Context) error {
	var runs []*RunResult
	targets := s.setups(false)
	for _, ka := range s.o.KeepAlive {
		for _, m := range Multiples() {
			reps := 1
			if m == RepeatMultiple && !ka {
				reps = s.o.Repeats
			}
			// Repeats are interleaved across setups so that a noisy
			// minute on the machine does not fall on one setup alone.
			for rep := range reps {
				for _, t := range targets {
					rate := m * t.cap10
					r, err := s.run(ctx, ScenarioGoodput, multipleName(m), m, t, ka, rep, stream{
						query:  "?cpu=10",
						phases: []loadgen.Phase{{Name: multipleName(m), Rate: rate, Duration: s.o.Phase}},
					})
					if err != nil {
						return err
					}
					runs = append(runs, r)
				}
			}
		}
	}
	return s.writeGoodput(runs)
}

// capacityDrop is scenario 2: offered 0.8x of capacity at ?cpu=10 for one
// phase, then the same rate at ?cpu=20 (the workers' new capacity is
// half): the offered load becomes about 1.6x. Two streams, started
// together, carry the two queries.
func (s *Suite) capacityDrop(ctx context.Context) error {
	const m = 0.8
	before, after := s.o.Phase, s.o.Phase*3/2
	var runs []*RunResult
	for _, ka := range s.o.KeepAlive {
		for _, t := range s.setups(false) {
			rate := m * t.cap10
			r, err := s.run(ctx, ScenarioDrop, "0.8x cpu=10 -> cpu=20", m, t, ka, 0,
				stream{query: "?cpu=10", phases: []loadgen.Phase{
					{Name: "cpu=10", Rate: rate, Duration: before},
					{Name: "cpu=20 (other stream)", Rate: 0, Duration: after},
				}},
				stream{query: "?cpu=20", phases: []loadgen.Phase{
					{Name: "cpu=10 (other stream)", Rate: 0, Duration: before},
					{Name: "cpu=20", Rate: rate, Duration: after},
				}},
			)
			if err != nil {
				return err
			}
			rec := FindRecovery(r.AllSeries(), r.Reports[0].Bucket, before, before+after, 0.9*t.cap20, 2*time.Second)
			r.Recovery = &rec
			runs = append(runs, r)
		}
	}
	return s.writeTimeline(ScenarioDrop, runs, before)
}

// retryStorm is scenario 3: clients retry at once on any failure (up to 3
// attempts); 0.8x for 5 s, a 1.5x trigger for 10 s, then 0.8x for 20 s.
func (s *Suite) retryStorm(ctx context.Context) error {
	steady, trigger, after := 5*time.Second, s.o.Phase, 2*s.o.Phase
	var runs []*RunResult
	for _, ka := range s.o.KeepAlive {
		for _, t := range s.setups(false) {
			r, err := s.run(ctx, ScenarioRetry, "0.8x/1.5x/0.8x", 0.8, t, ka, 0, stream{
				query: "?cpu=10",
				phases: []loadgen.Phase{
					{Name: "0.8x", Rate: 0.8 * t.cap10, Duration: steady},
					{Name: "trigger 1.5x", Rate: 1.5 * t.cap10, Duration: trigger},
					{Name: "0.8x after", Rate: 0.8 * t.cap10, Duration: after},
				},
				tweak: func(c *loadgen.Config) { c.Retry = loadgen.RetryImmediate },
			})
			if err != nil {
				return err
			}
			// Back means 90% of what is offered after the trigger (0.8x):
			// goodput cannot exceed the offered load.
			rec := FindRecovery(r.AllSeries(), r.Reports[0].Bucket, steady+trigger, steady+trigger+after, 0.9*0.8*t.cap10, 2*time.Second)
			r.Recovery = &rec
			runs = append(runs, r)
		}
	}
	return s.writeTimeline(ScenarioRetry, runs, steady, trigger)
}

// Mix is a header mix of scenario tenants.
type Mix struct {
	Name   string
	Header string
	Values []loadgen.Weighted
}

// TenantMixes are scenario tenants' mixes, each at 3x capacity: a noisy
// tenant sending 80% of the load (2.4x) beside two that send 0.3x each
// (each under its fair third); and a mix of 25% critical (0.75x) and 75%
// sheddable requests, the priority sent by a trusted peer.
func TenantMixes() []Mix {
	return []Mix{
		{Name: "noisy-tenant", Header: "X-Tenant", Values: []loadgen.Weighted{{Value: "noisy", Weight: 0.8}, {Value: "a", Weight: 0.1}, {Value: "b", Weight: 0.1}}},
		{Name: "priority", Header: admission.HeaderPriority, Values: []loadgen.Weighted{{Value: admission.Critical.String(), Weight: 0.25}, {Value: admission.Sheddable.String(), Weight: 0.75}}},
	}
}

// TenantMultiple is the offered load of scenario tenants, in capacities.
const TenantMultiple = 3.0

func (s *Suite) tenants(ctx context.Context) error {
	var runs []*RunResult
	for _, ka := range s.o.KeepAlive {
		for _, mix := range TenantMixes() {
			for _, t := range s.setups(true) {
				r, err := s.run(ctx, ScenarioTenants, mix.Name, TenantMultiple, t, ka, 0, stream{
					query:  "?cpu=10",
					phases: []loadgen.Phase{{Name: mix.Name, Rate: TenantMultiple * t.cap10, Duration: s.o.Phase}},
					tweak: func(c *loadgen.Config) {
						c.HeaderMixes = []loadgen.HeaderMix{{Name: mix.Header, Values: mix.Values}}
					},
				})
				if err != nil {
					return err
				}
				runs = append(runs, r)
			}
		}
	}
	return s.writeClasses(ScenarioTenants, runs)
}

// HeteroMix is scenario hetero's query mix: 90% cheap, 10% ten times
// dearer; the mean cost is 9.5 ms.
func HeteroMix() []loadgen.Weighted {
	return []loadgen.Weighted{{Value: "cpu=5", Weight: 0.9}, {Value: "cpu=50", Weight: 0.1}}
}

// HeteroMultiple is scenario hetero's offered load in capacities (of the
// mix's mean cost): under capacity, where dispatch alone decides latency.
const HeteroMultiple = 0.7

func (s *Suite) hetero(ctx context.Context) error {
	var runs []*RunResult
	for _, ka := range s.o.KeepAlive {
		for _, t := range s.setups(true) {
			// Capacity was measured at 10 ms a page; the mix costs 9.5 ms.
			rate := HeteroMultiple * t.cap10 * 10 / 9.5
			r, err := s.run(ctx, ScenarioHetero, "0.7x 90% cpu=5 + 10% cpu=50", HeteroMultiple, t, ka, 0, stream{
				query:  "", // the mix adds ?cpu=
				phases: []loadgen.Phase{{Name: "0.7x mix", Rate: rate, Duration: s.o.Phase}},
				tweak:  func(c *loadgen.Config) { c.QueryMix = HeteroMix() },
			})
			if err != nil {
				return err
			}
			runs = append(runs, r)
		}
	}
	return s.writeClasses(ScenarioHetero, runs)
}

// HopClients is the number of closed-loop clients of scenario hop.
const HopClients = 16

// HopResult is scenario hop's figure for one setup and client mode.
type HopResult struct {
	Setup     string    `json:"setup"`
	KeepAlive bool      `json:"keepalive"`
	Rates     []float64 `json:"rates_rps"`
	Median    float64   `json:"median_rps"`
	Errors    int64     `json:"errors"`
	MeanLat   []float64 `json:"mean_latency_ms"`
}

// hop measures the most trivial responses (?cpu=0) a setup passes per
// second, closed-loop with HopClients clients, three times; "direct" is
// the workers without a front (the same clients, shared among them).
func (s *Suite) hop(ctx context.Context) error {
	var out []HopResult
	for _, ka := range s.o.KeepAlive {
		var direct []string
		for _, a := range s.workers.Addrs {
			direct = append(direct, "http://"+a+"/?cpu=0")
		}
		type hopTarget struct {
			name   string
			urls   []string
			perURL int
		}
		targets := []hopTarget{{"direct", direct, HopClients / len(direct)}}
		for _, t := range s.setups(true) {
			targets = append(targets, hopTarget{t.name, []string{t.url + "?cpu=0"}, HopClients})
		}
		for _, ht := range targets {
			h := HopResult{Setup: ht.name, KeepAlive: ka}
			for range 3 {
				r, err := Capacity(ctx, ht.urls, ht.perURL, s.o.CapacityTime, !ka)
				if err != nil {
					return err
				}
				h.Rates = append(h.Rates, r.Rate)
				h.Errors += r.Errors
				h.MeanLat = append(h.MeanLat, float64(r.MeanLatency)/float64(time.Millisecond))
			}
			h.Median = Median(h.Rates)
			s.log.Info("hop", "setup", ht.name, "keepalive", ka, "rates", h.Rates, "errors", h.Errors)
			out = append(out, h)
		}
	}
	return s.writeHop(out)
}
