package limit_test

import (
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// mutexFloor is the least an Observe guarded by one mutex can cost: lock,
// add, unlock. It is the reference Gradient.Observe is measured against.
type mutexFloor struct {
	mu sync.Mutex
	n  int
}

func (m *mutexFloor) Limit() int { return 1 }
func (m *mutexFloor) Observe(limit.Sample) int {
	m.mu.Lock()
	m.n++
	m.mu.Unlock()
	return 1
}
func (m *mutexFloor) Tick(limit.Window) int { return 1 }

func algorithms(b *testing.B) map[string]limit.Algorithm {
	a, err := limit.NewAIMD(limit.AIMDOptions{})
	if err != nil {
		b.Fatal(err)
	}
	g, err := limit.NewGradient(limit.GradientOptions{})
	if err != nil {
		b.Fatal(err)
	}
	au, err := limit.NewAuto(limit.AutoOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return map[string]limit.Algorithm{
		"Auto":           au,
		"Fixed":          limit.NewFixed(100),
		"AIMD":           a,
		"Gradient":       g,
		"mutexReference": &mutexFloor{},
	}
}

// BenchmarkObserve is the per-request cost, from every P at once.
func BenchmarkObserve(b *testing.B) {
	for _, name := range []string{"Fixed", "AIMD", "Gradient", "Auto", "mutexReference"} {
		b.Run(name, func(b *testing.B) {
			alg := algorithms(b)[name]
			s := limit.Sample{RTT: 10 * time.Millisecond, Inflight: 50}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					alg.Observe(s)
				}
			})
		})
	}
}

// BenchmarkObserveSerial is the uncontended per-request cost.
func BenchmarkObserveSerial(b *testing.B) {
	for _, name := range []string{"Gradient", "mutexReference"} {
		b.Run(name, func(b *testing.B) {
			alg := algorithms(b)[name]
			s := limit.Sample{RTT: 10 * time.Millisecond, Inflight: 50}
			b.ReportAllocs()
			for b.Loop() {
				alg.Observe(s)
			}
		})
	}
}

func BenchmarkLimit(b *testing.B) {
	alg := algorithms(b)["Gradient"]
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = alg.Limit()
		}
	})
}

// BenchmarkWindow is one sample window: 10 completed requests (Gradient's
// MinSamples, so every Tick decides) and the Tick.
func BenchmarkWindow(b *testing.B) {
	for _, name := range []string{"AIMD", "Gradient", "Auto"} {
		b.Run(name, func(b *testing.B) {
			alg := algorithms(b)[name]
			b.ReportAllocs()
			for b.Loop() {
				l := alg.Limit()
				for range 10 {
					alg.Observe(limit.Sample{RTT: 10 * time.Millisecond, Inflight: l})
				}
				alg.Tick(limit.Window{Saturation: 0.5, Inflight: l, PeakInflight: l})
			}
		})
	}
}

func BenchmarkRuntimeSaturation(b *testing.B) {
	r, err := limit.NewRuntime(limit.RuntimeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = r.Saturation()
		}
	})
}
