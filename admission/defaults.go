package admission

import (
	"time"

	"github.com/sluicehq/sluice/limit"
)

// defaultLimit is the algorithm of a Controller with no Limit configured,
// and its signal: sig, or when nil the Auto limit's own (the CPUs
// oversubscribed), so that requests are shed at once, not queued, while
// CPU-bound handlers outnumber the CPUs.
func defaultLimit(sig limit.Signal) (limit.Algorithm, limit.Signal) {
	a, err := limit.NewAuto(limit.AutoOptions{})
	if err != nil {
		panic(err) // the zero options are valid
	}
	if sig == nil {
		sig = a
	}
	return a, sig
}

// defaultWindow is the sample window of a Controller with none configured:
// the algorithm's own, else 1 s.
func defaultWindow(alg limit.Algorithm) time.Duration {
	if p, ok := alg.(limit.Paced); ok && p.Window() > 0 {
		return p.Window()
	}
	return time.Second
}
