// Package eval is sluice's overload evaluation suite: it runs sluice and
// the setups it claims to beat (a round-robin proxy without admission
// control, nginx in front of HAProxy as Airbnb ran them, a plain net/http
// server) side by side against the same worker processes, offers each the
// same open-loop load with internal/loadgen, and writes what came back as
// JSON, SVG charts and Markdown tables under docs/bench/.
//
// The suite is a program, internal/eval/cmd/eval, not part of `go test ./...`: it
// starts real processes and overloads them for tens of minutes. This
// package holds its parts, each testable on its own: process management
// (Process), the demo workers (Workers), the peers' configurations
// (NginxConfig, HAProxyConfig, SluiceConfig), the library-face servers
// (ServeLib), the real Node.js workers of scenarios node-react
// and node-async, and of their -quiet twins whose workers report no
// saturation (StartNodeWorkers, NodeWorkloads, internal/eval/node/counters.js),
// and the figures drawn from reports (Recovery, Wasted, Median, BusyShare,
// the charts).
//
// The parts `sluice demo` shares with it, the round-robin proxy, closed-loop
// capacity measurement and the library-face routes, are the product's, in
// internal/demo: the suite imports them, the binary never imports the suite.
//
// Everything listens on and connects to 127.0.0.1 only, and every process
// is started in its own process group and stopped by its PID.
//
// internal/eval/README.md has the commands; docs/benchmarks.md the results.
package eval
