module github.com/sluicehq/sluice/e2e

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/sluicehq/sluice v0.0.0-00010101000000-000000000000
)

require (
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
)

// The tests share sluice's test helpers (internal/testutil), from this
// repository's own copy.
replace github.com/sluicehq/sluice => ../
