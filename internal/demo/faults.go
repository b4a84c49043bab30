package demo

import (
	"net/http"
	"os"
)

// EnvFaults, set to 1, gives a demo worker paths that misbehave on purpose,
// for sluice's attack tests of hung and poisonous workers. Never set it in
// production: any client could then hang or kill a worker.
const EnvFaults = "SLUICE_DEMO_FAULTS"

// Paths of a demo worker started with EnvFaults=1.
const (
	// FaultLoopPath never answers: the request spins forever, as an
	// endless loop in a renderer would.
	FaultLoopPath = "/__fault/loop"
	// FaultExitPath kills the worker (exit status 3) before it answers: a
	// poisonous request.
	FaultExitPath = "/__fault/exit"
)

// withFaults adds the fault paths in front of h.
func withFaults(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case FaultLoopPath:
			//lint:ignore SA5002 the endless loop is the fault this path injects
			for { // spins one P; the runtime still preempts it, so the server lives
			}
		case FaultExitPath:
			os.Exit(3)
		}
		h.ServeHTTP(w, r)
	})
}
