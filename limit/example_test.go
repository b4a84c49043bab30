package limit_test

import (
	"context"
	"fmt"
	"log"
	"math"
	"time"

	"github.com/sluicehq/sluice/limit"
)

// The AIMD rule: a saturated process backs off by a tenth a window, an
// unsaturated one grows by the square root of its limit.
func Example_aimd() {
	a, err := limit.NewAIMD(limit.AIMDOptions{Max: 100}) // Max: the hard ceiling
	if err != nil {
		log.Fatal(err)
	}
	for _, sat := range []float64{0.99, 0.99, 0.99, 0.5, 0.5, math.NaN()} {
		l := a.Tick(limit.Window{Saturation: sat, Inflight: a.Limit()})
		fmt.Printf("saturation %.2f -> limit %d\n", sat, l)
	}
	// Output:
	// saturation 0.99 -> limit 90
	// saturation 0.99 -> limit 81
	// saturation 0.99 -> limit 72
	// saturation 0.50 -> limit 81
	// saturation 0.50 -> limit 90
	// saturation NaN -> limit 100
}

// A Gradient fed by a service with 8 cores and 10ms of CPU per request:
// from a warm start of 100 it walks down while RTT follows concurrency,
// learns the no-load RTT when RTT stops falling, then settles around 1.5x
// the knee (Tolerance 1.5).
func ExampleGradient() {
	g, err := limit.NewGradient(limit.GradientOptions{})
	if err != nil {
		log.Fatal(err)
	}
	rtt := func(inflight int) time.Duration { // 8 cores, 10ms each
		return 10 * time.Millisecond * time.Duration(max(inflight, 8)) / 8
	}
	var limits []int
	for range 24 {
		inflight := g.Limit() // clients always have more work
		for range 50 {
			g.Observe(limit.Sample{RTT: rtt(inflight), Inflight: inflight})
		}
		limits = append(limits, g.Tick(limit.Window{Inflight: inflight, PeakInflight: inflight}))
	}
	fmt.Println(limits)
	b, trusted := g.Baseline()
	fmt.Printf("baseline %v (trusted %v)\n", b, trusted)
	// Output:
	// [80 64 51 41 33 26 21 17 13 11 9 7 14 13 12 16 14 13 12 16 14 13 12 16]
	// baseline 10ms (trusted true)
}

func ExampleFixed() {
	f := limit.NewFixed(4) // four worker slots
	fmt.Println(f.Tick(limit.Window{Saturation: 1, Inflight: 4}))
	f.Set(6) // two more workers
	fmt.Println(f.Limit())
	// Output:
	// 4
	// 6
}

// A Runtime signal sampled every 100ms for as long as the server runs; the
// admission Controller reads Saturation and passes it to the algorithm.
func ExampleRuntime() {
	sig, err := limit.NewRuntime(limit.RuntimeOptions{})
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := context.WithTimeout(context.Background(), time.Second)
	defer stop()
	go sig.Run(ctx, 100*time.Millisecond)
	// ... later, once per sample window:
	_ = limit.Window{Now: time.Now(), Saturation: sig.Saturation()}
}

// A front proxy whose saturation is its busiest worker's.
func ExampleSignalFunc() {
	workers := []float64{0.4, 0.97, 0.6} // reported by the workers
	busiest := limit.SignalFunc(func() float64 {
		m := 0.0
		for _, w := range workers {
			m = max(m, w)
		}
		return m
	})
	fmt.Println(busiest.Saturation())
	// Output: 0.97
}
