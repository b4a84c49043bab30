// Package nextjs holds the test of the Next.js example: a page rendered on
// every request (pages/index.js), built by next build and served by next
// start, unchanged, as sluice's workers (sluice.yaml).
//
// The package has no code of its own. Its test runs the example behind a
// freshly built sluice binary and checks what a Next.js deployment relies
// on: pages render through sluice, and SIGHUP replaces every worker under
// load without failing a request.
//
// It needs node on PATH, the example's node_modules (npm ci) and its build
// (npm run build) in this directory; without them it skips, unless the
// environment variable CI is set, in which case it fails.
package nextjs
