//go:build unix

package nextjs

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// pageMarker is in the page pages/index.js renders, cardMarker in each
// card of pages/listing.js.
const (
	pageMarker = `data-testid="next-page"`
	cardMarker = `data-testid="listing-card"`
)

// Deadlines of the waits on real processes: generous, because the machine
// is shared and a cold Next.js start takes a second or more.
const (
	startDeadline = 60 * time.Second
	rollDeadline  = 90 * time.Second
	exitDeadline  = 15 * time.Second
	pollInterval  = 50 * time.Millisecond
)

// requireBuild returns the example's absolute directory, after checking
// that node is on PATH, npm ci has been run and the app is built. Without
// them the test is skipped, or fails when the environment variable CI is
// set: CI must run it.
func requireBuild(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		tb.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "next", "package.json")); err != nil {
		missing = "node_modules is missing: run npm ci in " + dir
	} else if _, err := os.Stat(filepath.Join(dir, ".next", "BUILD_ID")); err != nil {
		missing = "the app is not built: run npm run build in " + dir
	}
	if missing == "" {
		return dir
	}
	testutil.Missing(tb, missing)
	return ""
}

// pollUntil is testutil.PollUntil at this test's interval.
func pollUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	testutil.PollUntil(tb, d, pollInterval, what, cond)
}

// workers is the part of the admin listener's /stats this test reads.
type workers struct {
	Supervisor struct {
		Workers []struct {
			ID    int    `json:"id"`
			State string `json:"state"`
		} `json:"workers"`
	} `json:"supervisor"`
}

func readyWorkers(c *http.Client, adminURL string) (ids []int, err error) {
	resp, err := c.Get(adminURL + "/stats")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var st workers
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, err
	}
	for _, w := range st.Supervisor.Workers {
		if w.State == "ready" {
			ids = append(ids, w.ID)
		}
	}
	return ids, nil
}

// TestNextStart runs the example as deployed: sluice serve on sluice.yaml
// with two `next start` workers, a real build of the app. A page renders
// through sluice; SIGHUP then replaces both workers, one at a time, while
// clients keep requesting pages, and no request fails.
func TestNextStart(t *testing.T) {
	dir := requireBuild(t)
	root := filepath.Join(dir, "..", "..")
	bin := filepath.Join(t.TempDir(), "sluice")
	if err := testutil.BuildSluice(root, bin); err != nil {
		t.Fatal(err)
	}
	addr, adminAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	// As a user runs it, on the ports the test was given. Its two clients
	// never wait for a slot, during the roll too (a replacement is added
	// before the worker it replaces is drained), so nothing is shed.
	cfg := filepath.Join(dir, "sluice.yaml")
	p := testutil.StartProcess(t, exec.Command(bin, "serve", "-c", cfg, "--listen", addr, "--admin", adminAddr), exitDeadline)
	base, adminURL := "http://"+addr, "http://"+adminAddr
	c := &http.Client{Timeout: 30 * time.Second}

	var before []int
	pollUntil(t, startDeadline, "both workers ready", func() bool {
		select {
		case <-p.Done():
			t.Fatalf("sluice exited during start: %v", p.Err())
		default:
		}
		ids, err := readyWorkers(c, adminURL)
		before = ids
		return err == nil && len(ids) == 2
	})
	if code, body := page(c, base); code != http.StatusOK || !strings.Contains(body, pageMarker) {
		t.Fatalf("GET /: got %d %.200q, want 200 and the page", code, body)
	}
	// The load tests' page (internal/eval/gap/next-ab.sh): as many cards
	// as asked, after the wait asked.
	for _, q := range []struct {
		query string
		cards int
	}{{"?cards=3", 3}, {"?io=20&cards=2", 2}, {"?cards=x", 20}} {
		code, body := get(c, base+"/listing"+q.query)
		if n := strings.Count(body, cardMarker); code != http.StatusOK || n != q.cards {
			t.Errorf("GET /listing%s: got %d with %d cards, want 200 with %d", q.query, code, n, q.cards)
		}
	}

	stop := keepRequesting(c, base, 2)
	if err := p.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, rollDeadline, "both workers replaced", func() bool {
		ids, err := readyWorkers(c, adminURL)
		if err != nil || len(ids) != 2 {
			return false
		}
		for _, id := range ids {
			for _, old := range before {
				if id == old {
					return false
				}
			}
		}
		return true
	})
	served, failures := stop()
	if len(failures) > 0 {
		t.Errorf("%d of %d requests failed during the roll, first: %s", len(failures), served+len(failures), failures[0])
	}
	if served == 0 {
		t.Error("no request was served during the roll")
	}
	if !p.Stop(exitDeadline) {
		t.Error("sluice did not exit after SIGTERM")
	}
}

func page(c *http.Client, base string) (int, string) { return get(c, base+"/") }

func get(c *http.Client, url string) (int, string) {
	resp, err := c.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err.Error()
	}
	return resp.StatusCode, string(b)
}

// keepRequesting has clients request the page one after the other until
// stop is called; stop returns how many were served and what failed.
func keepRequesting(c *http.Client, base string, clients int) (stop func() (served int, failures []string)) {
	done := make(chan struct{})
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		ok  int
		bad []string
	)
	for range clients {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				code, body := page(c, base)
				mu.Lock()
				if code == http.StatusOK && strings.Contains(body, pageMarker) {
					ok++
				} else {
					bad = append(bad, fmt.Sprintf("%d %.200q", code, body))
				}
				mu.Unlock()
			}
		})
	}
	return func() (int, []string) {
		close(done)
		wg.Wait()
		return ok, bad
	}
}

// TestCustomServer runs docs/recipes.md's custom server (server.js):
// Next.js's handler wrapped by sluice-worker. The worker reports its
// saturation to sluice, answers readiness on /healthz, and leaves
// compression to sluice (next.config.js: compress: false).
func TestCustomServer(t *testing.T) {
	dir := requireBuild(t)
	bin := filepath.Join(t.TempDir(), "sluice")
	if err := testutil.BuildSluice(filepath.Join(dir, "..", ".."), bin); err != nil {
		t.Fatal(err)
	}
	addr, adminAddr := testutil.FreeAddr(t), testutil.FreeAddr(t)
	cfg := testutil.WriteConfig(t, fmt.Sprintf(`server: {listen: %q, drainDelay: 100ms}
admin: {listen: %q}
workers:
  command: [node, server.js]
  dir: %q
  count: 1
  readyPath: /healthz
  env: {NODE_ENV: production, NEXT_TELEMETRY_DISABLED: "1"}
`, addr, adminAddr, dir))
	p := testutil.StartProcess(t, exec.Command(bin, "serve", "-c", cfg), exitDeadline)
	base, adminURL := "http://"+addr, "http://"+adminAddr
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	pollUntil(t, startDeadline, "the worker ready", func() bool {
		select {
		case <-p.Done():
			t.Fatalf("sluice exited during start: %v", p.Err())
		default:
		}
		ids, err := readyWorkers(c, adminURL)
		return err == nil && len(ids) == 1
	})

	gzipped := func(url string) (code int, encoding, body string) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		r := io.Reader(resp.Body)
		if resp.Header.Get("Content-Encoding") == "gzip" {
			if r, err = gzip.NewReader(resp.Body); err != nil {
				t.Fatal(err)
			}
		}
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		return resp.StatusCode, resp.Header.Get("Content-Encoding"), string(b)
	}
	if code, enc, body := gzipped(base + "/"); code != http.StatusOK || enc != "gzip" || !strings.Contains(body, pageMarker) {
		t.Errorf("through sluice: got %d, Content-Encoding %q, %.200q; want 200, gzip, the page", code, enc, body)
	}

	var st struct {
		Proxy struct {
			Endpoints []struct {
				Addr       string  `json:"addr"`
				Saturation float64 `json:"saturation"`
			} `json:"endpoints"`
		} `json:"proxy"`
	}
	resp, err := c.Get(adminURL + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(resp.Body).Decode(&st)
	resp.Body.Close()
	if err != nil || len(st.Proxy.Endpoints) != 1 {
		t.Fatalf("/stats: got %+v, %v; want one endpoint", st, err)
	}
	e := st.Proxy.Endpoints[0]
	if e.Saturation < 0 {
		t.Errorf("the worker's saturation: got %v, want a report (sluice-worker's wrap)", e.Saturation)
	}
	// Asked directly, the worker does not compress: Next.js leaves it to
	// sluice.
	if code, enc, _ := gzipped("http://" + e.Addr + "/"); code != http.StatusOK || enc != "" {
		t.Errorf("the worker itself: got %d, Content-Encoding %q; want 200, none", code, enc)
	}
}
