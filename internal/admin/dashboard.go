package admin

import (
	_ "embed"
	"html"
	"strings"
)

// dashboardHTML is the dashboard page: inline CSS and JavaScript, no
// external asset, so that it works on an air-gapped admin port and under
// the Content-Security-Policy the handler sends.
//
//go:embed dashboard.html
var dashboardHTML string

// dashboard returns the page for an instance titled title, linking pprof
// when it is served.
func dashboard(title string, pprof bool) []byte {
	if title == "" {
		title = "admin"
	}
	link := ""
	if pprof {
		link = `<a href="./debug/pprof/">/debug/pprof/</a>`
	}
	return []byte(strings.NewReplacer("{{TITLE}}", html.EscapeString(title), "<!--PPROF-->", link).Replace(dashboardHTML))
}
