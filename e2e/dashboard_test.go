package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromium returns the Chromium executable: SLUICE_CHROMIUM, else the
// first of the usual names on PATH. Without one the test fails, unless
// SLUICE_E2E=skip, so that CI never passes by silently skipping it.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("SLUICE_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const msg = "no Chromium found (install Debian's chromium package, or set SLUICE_CHROMIUM)"
	if os.Getenv("SLUICE_E2E") == "skip" {
		t.Skip(msg + "; skipped because SLUICE_E2E=skip")
	}
	t.Fatal(msg + "; set SLUICE_E2E=skip to skip this test")
	return ""
}

// drawn is what the dashboard exposes of what it drew: for each chart,
// the points drawn per series and each series' newest value; the worker
// cards' data attributes; the tiles' text.
type drawn struct {
	Polls  int `json:"polls"`
	Charts map[string]struct {
		Points map[string]int     `json:"points"`
		Last   map[string]float64 `json:"last"`
	} `json:"charts"`
	Workers []map[string]string `json:"workers"`
	Tiles   map[string]string   `json:"tiles"`
}

const readDrawn = `(() => {
  const charts = {};
  for (const cv of document.querySelectorAll("canvas")) {
    charts[cv.id] = { points: JSON.parse(cv.dataset.points || "{}"), last: JSON.parse(cv.dataset.last || "{}") };
  }
  const tiles = {};
  for (const el of document.querySelectorAll(".tile .value")) tiles[el.id] = el.textContent;
  return JSON.stringify({
    polls: Number(document.body.dataset.polls || 0),
    charts,
    workers: [...document.querySelectorAll(".worker")].map(e => Object.assign({}, e.dataset)),
    tiles,
  });
})()`

// The dashboard, in a real browser against sluice fronting two
// single-threaded demo workers under more load than they can serve, draws
// real numbers: goodput, sheds by reason, queue depth, p50 and p99 from
// the histograms, and both workers with their limits and states.
func TestDashboardUnderLoad(t *testing.T) {
	browser := chromium(t)
	s := startSluice(t, `server:
  listen: %q
  drainDelay: 0s
  backpressure: {queueSize: 4, queueTimeout: 500ms}
admin: {listen: %q, pprof: false}
workers:
  command: [%q, demo-worker]
  count: 2
  concurrency: 1
  readyPath: /__worker/ready
  slowStart: 0s
`)
	ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
	defer cancel()
	// About 2 x 50 requests/s of capacity (10 ms renders), offered by 12
	// clients at once: the queue of 4 fills and the rest is shed.
	stop := load(ctx, "http://"+s.addr+"/?cpu=10", 12)
	defer stop()

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser),
		chromedp.NoSandbox, // CI runs as root, where Chromium's sandbox cannot start
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1400, 1400),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()

	// Eight polls: enough for rates, for the 5-poll percentile window and
	// for every chart to have drawn a line.
	if err := chromedp.Do(bctx, chromedp.Navigate("http://"+s.admin+"/")); err != nil {
		t.Fatalf("opening the dashboard: %v", err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`Number(document.body.dataset.polls || 0) >= 8`,
		chromedp.WithPollingInterval(200*time.Millisecond), chromedp.WithPollingTimeout(bound))); err != nil {
		t.Fatalf("waiting for eight polls of /stats: %v", err)
	}
	raw, err := chromedp.Run(bctx, chromedp.Evaluate[string](readDrawn))
	if err != nil {
		t.Fatalf("reading what the dashboard drew: %v", err)
	}
	var d drawn
	if err := json.Unmarshal([]byte(raw), &d); err != nil {
		t.Fatalf("%v in %s", err, raw)
	}
	t.Logf("drawn: %s", raw)

	checkDrawn(t, &d)
	screenshot(t, bctx)
}

func checkDrawn(t *testing.T, d *drawn) {
	t.Helper()
	tput, lat, shed, queue := d.Charts["c-tput"], d.Charts["c-lat"], d.Charts["c-shed"], d.Charts["c-queue"]
	if g := tput.Last["goodput/s"]; g <= 0 || tput.Points["goodput/s"] < 3 {
		t.Errorf("goodput chart: got %v/s over %d points, want above 0 over at least 3", g, tput.Points["goodput/s"])
	}
	p50, p99 := lat.Last["p50"], lat.Last["p99"]
	if p50 <= 0 || p99 < p50 {
		t.Errorf("latency chart: got p50 %v ms, p99 %v ms; want 0 < p50 <= p99", p50, p99)
	}
	// A 10 ms render: the median service time cannot be far below it
	// (its bucket starts at 6.4 ms), and no percentile is past the
	// histogram's last bound. A loaded CI machine stretches the tail
	// (p99s of 700 ms were seen on two shared cores beside Chromium), so
	// the bound is loose.
	if p50 < 5 || p99 > 30_000 {
		t.Errorf("latency chart: got p50 %v ms, p99 %v ms for 10 ms renders", p50, p99)
	}
	if lat.Points["p99"] < 3 {
		t.Errorf("latency chart: got %d p99 points, want at least 3", lat.Points["p99"])
	}
	var shedRate float64
	for r, v := range shed.Last {
		if shed.Points[r] < 1 {
			t.Errorf("shed chart: reason %s has a value but no points", r)
		}
		shedRate += v
	}
	if len(shed.Points) == 0 || shedRate <= 0 {
		t.Errorf("shed chart: got reasons %v with %v/s, want sheds under 12 clients for 2 slots and a queue of 4", shed.Points, shedRate)
	}
	if queue.Points["queued"] < 3 {
		t.Errorf("queue chart: got %d points, want at least 3", queue.Points["queued"])
	}
	if len(d.Workers) != 2 {
		t.Fatalf("got %d worker rows, want 2: %v", len(d.Workers), d.Workers)
	}
	for _, w := range d.Workers {
		if w["limit"] != "1" || w["state"] != "ready" {
			t.Errorf("worker %s: got limit %s, state %s; want 1, ready", w["worker"], w["limit"], w["state"])
		}
	}
	for id, text := range d.Tiles {
		if text == "" || text == "–" {
			t.Errorf("tile %s: got %q, want a value", id, text)
		}
	}
}

// screenshot saves a full-page PNG of the dashboard to
// SLUICE_E2E_SCREENSHOT, or the test's temporary directory, and checks it
// is one.
func screenshot(t *testing.T, ctx context.Context) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) || len(png) < 10_000 {
		t.Fatalf("screenshot: got %d bytes starting %q, want a PNG", len(png), png[:min(8, len(png))])
	}
	path := os.Getenv("SLUICE_E2E_SCREENSHOT")
	if path == "" {
		path = filepath.Join(t.TempDir(), "dashboard.png")
	}
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s (%d bytes)", path, len(png))
}
