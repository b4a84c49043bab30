// Package nextjs holds the tests of the Next.js example: a page rendered
// on every request (pages/index.js), built by next build and served as
// sluice's workers either by next start, unchanged (sluice.yaml), or by
// the custom server of docs/recipes.md (server.js), which reports the
// event loop's saturation with sluice-worker.
//
// The package has no code of its own. Its tests run the example behind a
// freshly built sluice binary and check what a Next.js deployment relies
// on: pages render through sluice, SIGHUP replaces every worker under
// load without failing a request, and the custom server reports its
// saturation and leaves compression to sluice. pages/listing.js is the
// page internal/eval/gap/next-ab.sh loads it with (cards to render, a
// wait before them); the tests check that it renders what it is asked.
//
// It needs node on PATH, the example's node_modules (npm ci) and its build
// (npm run build) in this directory; without them it skips, unless the
// environment variable CI is set, in which case it fails.
package nextjs
