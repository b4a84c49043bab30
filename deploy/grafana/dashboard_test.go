// Package grafana holds sluice's Grafana dashboard; its test checks the
// dashboard against the metrics sluice exports.
package grafana

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/admin"
)

type dashboard struct {
	UID    string `json:"uid"`
	Panels []struct {
		ID      int    `json:"id"`
		Type    string `json:"type"`
		Title   string `json:"title"`
		GridPos struct {
			X, Y, W, H int
		} `json:"gridPos"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
	} `json:"panels"`
}

func load(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile("sluice-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

var (
	metricRef  = regexp.MustCompile(`\bsluice_[a-z_]+`)
	labelMatch = regexp.MustCompile(`\b(outcome|reason|priority|state)\s*!?=\s*"([^"]*)"`)
)

// Every metric a panel queries is one sluice exports, with label values it
// can have: a renamed metric or a misspelt outcome would leave a panel
// empty without an error.
func TestDashboardMetrics(t *testing.T) {
	d := load(t)
	valid := map[string][]string{"outcome": {}, "reason": {}, "priority": {}, "state": {"starting", "warming", "ready", "draining", "stopping", "exited"}}
	for _, o := range admission.WaitOutcomes() {
		valid["outcome"] = append(valid["outcome"], o.String())
	}
	for _, o := range admission.ServiceOutcomes() {
		valid["outcome"] = append(valid["outcome"], o.String())
	}
	valid["outcome"] = append(valid["outcome"], admin.QuotaOutcomes...)
	for _, r := range admission.Reasons() {
		valid["reason"] = append(valid["reason"], r.String())
	}
	for _, p := range admission.Priorities() {
		valid["priority"] = append(valid["priority"], p.String())
	}
	used := map[string]bool{}
	for _, p := range d.Panels {
		if p.Type != "row" && len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			for _, m := range metricRef.FindAllString(tg.Expr, -1) {
				name := m
				for _, suf := range []string{"_bucket", "_count", "_sum"} {
					if base, ok := strings.CutSuffix(m, suf); ok && strings.HasSuffix(base, "_seconds") {
						name = base
					}
				}
				used[name] = true
				if !slices.Contains(admin.MetricNames, name) {
					t.Errorf("panel %q queries %s, which sluice does not export", p.Title, m)
				}
			}
			for _, lm := range labelMatch.FindAllStringSubmatch(tg.Expr, -1) {
				if !slices.Contains(valid[lm[1]], lm[2]) {
					t.Errorf("panel %q matches %s=%q, which is not a value of %s (%v)", p.Title, lm[1], lm[2], lm[1], valid[lm[1]])
				}
			}
		}
	}
	// What the issue asks the dashboard to show.
	for _, name := range []string{"sluice_service_time_seconds", "sluice_queue_wait_seconds", "sluice_shed_total",
		"sluice_queued", "sluice_worker_limit", "sluice_workers", "sluice_supervisor_crash_looping",
		"sluice_proxy_bad_gateway_total", "sluice_proxy_gateway_timeout_total", "sluice_requests_total",
		"sluice_quota_requests_total", "sluice_quota_store_up"} {
		if !used[name] {
			t.Errorf("no panel shows %s", name)
		}
	}
}

// Panels have unique ids and do not overlap on Grafana's 24-column grid.
func TestDashboardLayout(t *testing.T) {
	d := load(t)
	if d.UID == "" {
		t.Error("the dashboard has no uid: each import would make a new copy")
	}
	ids := map[int]bool{}
	type cell struct{ x, y int }
	taken := map[cell]string{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d used twice", p.ID)
		}
		ids[p.ID] = true
		g := p.GridPos
		if g.X < 0 || g.W <= 0 || g.H <= 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v is off the grid", p.Title, g)
		}
		for x := g.X; x < g.X+g.W; x++ {
			for y := g.Y; y < g.Y+g.H; y++ {
				if other, ok := taken[cell{x, y}]; ok {
					t.Fatalf("panel %q overlaps %q at (%d, %d)", p.Title, other, x, y)
				}
				taken[cell{x, y}] = p.Title
			}
		}
	}
}
