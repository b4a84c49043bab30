package proxy

import (
	"math"
	"strconv"
	"time"
)

// HeaderSaturation is the response header in which a worker reports how
// saturated it is, a decimal in [0, 1]: for Node.js, its event-loop
// utilization over the last 100 ms or so (node/sluice-worker sets it). The
// proxy reads it, feeds it to the worker's limit (limit.Worker) and removes
// it before the client sees the response.
const HeaderSaturation = "Sluice-Saturation"

// WorkerLimit tunes the per-worker concurrency limit of adaptive endpoints
// (supervisor.Endpoint.Adaptive): each has a limit.Worker, from
// limit.WorkerOptions with these fields, its Initial and Max set by the
// Proxy. The zero value is usable.
type WorkerLimit struct {
	// MaxSaturation is limit.WorkerOptions.MaxSaturation: the reported
	// saturation at or above which a worker's limit backs off, in (0, 1];
	// zero means 0.98.
	MaxSaturation float64
	// Window is limit.WorkerOptions.Window: how often each worker's limit
	// is reconsidered; zero means limit.WorkerWindow.
	Window time.Duration
}

// parseSaturation reads a HeaderSaturation value: NaN when it is not a
// number, which limit.Worker.Report counts as a bad report as it does a
// number outside [0, 1].
func parseSaturation(v string) float64 {
	s, err := strconv.ParseFloat(v, 64)
	if err != nil {
		return math.NaN()
	}
	return s
}
