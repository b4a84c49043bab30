// Package e2e drives sluice's admin dashboard in a real headless Chromium
// against a running `sluice serve` under load: the dashboard's JavaScript
// runs, polls /stats, and draws charts whose values the tests read back.
//
// It is its own module, so that chromedp never enters sluice's go.mod. The
// tests build the sluice binary from the parent directory with `go build`.
// They need Chromium (Debian's chromium package, or SLUICE_CHROMIUM naming
// the executable); without it they fail, unless SLUICE_E2E=skip says to
// skip them. SLUICE_E2E_SCREENSHOT names a file to save the dashboard's
// screenshot to; by default it goes to the test's temporary directory.
//
//	(cd e2e && go test -race ./...)
package e2e
