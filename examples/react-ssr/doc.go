// Package reactssr holds the tests of the React server-side-rendering
// example: worker.js, a Node.js renderer of a listing page, and sluice.yaml,
// sluice in front of two of them.
//
// The package has no code of its own. Its tests run the worker directly and
// behind a freshly built sluice binary, and check what a deployment relies
// on: pages render through sluice, a killed worker is replaced, SIGHUP
// restarts every worker without failing a request, and SIGTERM lets the
// request in flight finish before sluice and its workers exit.
//
// They need node on PATH and the example's node_modules (npm ci in this
// directory); without them they skip, unless the environment variable CI
// is set, in which case they fail.
package reactssr
