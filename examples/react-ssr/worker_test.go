//go:build unix

package reactssr

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// worker is worker.js started directly, on a unix socket as sluice's
// workers.address: unix would start it.
type worker struct {
	*testutil.Process
	socket string
	client *http.Client
}

// startWorker starts node worker.js with SLUICE_SOCKET and the extra
// environment, and waits until /healthz answers 200.
func startWorker(tb testing.TB, dir string, env ...string) *worker {
	tb.Helper()
	// A socket path must fit in 108 bytes: a short directory, not TempDir's.
	sockDir, err := os.MkdirTemp("", "rssr-")
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { os.RemoveAll(sockDir) })
	socket := filepath.Join(sockDir, "w.sock")
	cmd := exec.Command("node", "worker.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), append([]string{"SLUICE_SOCKET=" + socket}, env...)...)
	w := &worker{Process: testutil.StartProcess(tb, cmd, exitDeadline), socket: socket}
	tr := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		},
	}
	tb.Cleanup(tr.CloseIdleConnections)
	w.client = &http.Client{Transport: tr}
	pollUntil(tb, startDeadline, "worker answers /healthz", func() bool {
		select {
		case <-w.Done():
			tb.Fatalf("worker exited during start: %v", w.Err())
		default:
		}
		r := w.get("/healthz")
		return r.err == nil && r.status == http.StatusOK
	})
	return w
}

func (w *worker) get(path string) reply {
	return get(w.client, "http://worker"+path, 10*time.Second)
}

func (w *worker) post(path, contentType, body string) reply {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://worker"+path, strings.NewReader(body))
	if err != nil {
		return reply{err: err}
	}
	req.Header.Set("Content-Type", contentType)
	return do(w.client, req)
}

func TestWorkerRoutes(t *testing.T) {
	dir := requireNode(t)
	w := startWorker(t, dir)
	pid := strconv.Itoa(w.PID())

	tests := []struct {
		name        string
		method      string
		path        string
		status      int
		contentType string
		contains    []string
		header      map[string]string
	}{
		{
			name: "health", method: http.MethodGet, path: "/healthz",
			status: 200, contentType: "text/plain; charset=utf-8", contains: []string{"ok"},
		},
		{
			name: "page", method: http.MethodGet, path: "/",
			status: 200, contentType: "text/html; charset=utf-8",
			contains: []string{"<!DOCTYPE html>", pageMarker, `data-id="1"`, `data-id="200"`, "Stays everywhere", "</html>"},
		},
		{
			name: "page 2 and a query", method: http.MethodGet, path: "/?page=2&q=Kyoto",
			status: 200, contentType: "text/html; charset=utf-8",
			contains: []string{pageMarker, `data-id="201"`, `data-id="400"`, "Stays matching “Kyoto”", `aria-current="page">2<`},
		},
		{
			name: "streamed page with its suspended reviews", method: http.MethodGet, path: "/stream",
			status: 200, contentType: "text/html; charset=utf-8",
			contains: []string{"<!DOCTYPE html>", pageMarker, `data-testid="reviews"`, "</html>"},
		},
		{
			name: "unknown path", method: http.MethodGet, path: "/nope",
			status: 404,
		},
		{
			name: "wrong method", method: http.MethodPost, path: "/",
			status: 405, header: map[string]string{"Allow": "GET, HEAD"},
		},
		{
			name: "batch is POST only", method: http.MethodGet, path: "/batch",
			status: 405, header: map[string]string{"Allow": "POST"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r reply
			if tt.method == http.MethodPost {
				r = w.post(tt.path, "text/plain", "")
			} else {
				r = w.get(tt.path)
			}
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.status != tt.status {
				t.Errorf("status: got %d, want %d", r.status, tt.status)
			}
			if got := r.header.Get("X-Worker-Pid"); got != pid {
				t.Errorf("X-Worker-Pid: got %q, want %q", got, pid)
			}
			if tt.contentType != "" {
				if got := r.header.Get("Content-Type"); got != tt.contentType {
					t.Errorf("Content-Type: got %q, want %q", got, tt.contentType)
				}
			}
			for _, s := range tt.contains {
				if !strings.Contains(r.body, s) {
					t.Errorf("body (%d bytes) lacks %q", len(r.body), s)
				}
			}
			for k, v := range tt.header {
				if got := r.header.Get(k); got != v {
					t.Errorf("%s: got %q, want %q", k, got, v)
				}
			}
		})
	}

	t.Run("page has every card and says how long it took", func(t *testing.T) {
		r := w.get("/?page=3")
		if msg := checkPage(r); msg != "" {
			t.Fatal(msg)
		}
		if got := strings.Count(r.body, cardMarker); got != pageSize {
			t.Errorf("listing cards: got %d, want %d", got, pageSize)
		}
		if got := r.header.Get("Server-Timing"); !strings.HasPrefix(got, "render;dur=") {
			t.Errorf("Server-Timing: got %q, want render;dur=<ms>", got)
		}
	})

	t.Run("same page, same HTML", func(t *testing.T) {
		a, b := w.get("/?page=7"), w.get("/?page=7")
		if a.err != nil || b.err != nil {
			t.Fatalf("got errors %v, %v", a.err, b.err)
		}
		if a.body != b.body {
			t.Errorf("two renders of page 7 differ (%d and %d bytes), want identical", len(a.body), len(b.body))
		}
	})
}

// hypernovaResponse is the answer of Hypernova's POST /batch.
type hypernovaResponse struct {
	Success bool            `json:"success"`
	Error   *hypernovaError `json:"error"`
	Results map[string]struct {
		Name       string          `json:"name"`
		HTML       *string         `json:"html"`
		StatusCode int             `json:"statusCode"`
		Success    bool            `json:"success"`
		Error      *hypernovaError `json:"error"`
		Duration   float64         `json:"duration"`
	} `json:"results"`
}

type hypernovaError struct {
	Name    string   `json:"name"`
	Message string   `json:"message"`
	Stack   []string `json:"stack"`
}

func TestWorkerBatch(t *testing.T) {
	dir := requireNode(t)
	w := startWorker(t, dir)

	t.Run("jobs render independently", func(t *testing.T) {
		r := w.post("/batch", "application/json", `{
			"page": {"name": "ListingPage", "data": {"page": 2, "query": "Porto"}},
			"search": {"name": "SearchBar", "data": {"query": "Lisbon"}},
			"missing": {"name": "NoSuchComponent", "data": {}}
		}`)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.status != http.StatusOK {
			t.Fatalf("status: got %d, want 200 (%s)", r.status, r.body)
		}
		var got hypernovaResponse
		if err := json.Unmarshal([]byte(r.body), &got); err != nil {
			t.Fatalf("decode %.200q: %v", r.body, err)
		}
		if !got.Success || got.Error != nil {
			t.Errorf("batch: got success %v error %+v, want true and null", got.Success, got.Error)
		}
		if len(got.Results) != 3 {
			t.Fatalf("results: got %d, want 3", len(got.Results))
		}
		jobs := []struct {
			token, name string
			success     bool
			status      int
			contains    string
		}{
			{"page", "ListingPage", true, 200, `data-id="201"`},
			{"search", "SearchBar", true, 200, `value="Lisbon"`},
			{"missing", "NoSuchComponent", false, 500, ""},
		}
		for _, j := range jobs {
			res := got.Results[j.token]
			if res.Name != j.name || res.Success != j.success || res.StatusCode != j.status {
				t.Errorf("%s: got name %q success %v status %d, want %q %v %d",
					j.token, res.Name, res.Success, res.StatusCode, j.name, j.success, j.status)
			}
			switch {
			case j.success && (res.HTML == nil || !strings.Contains(*res.HTML, j.contains)):
				t.Errorf("%s: html lacks %q", j.token, j.contains)
			case j.success && res.Error != nil:
				t.Errorf("%s: got error %+v, want null", j.token, res.Error)
			case !j.success && (res.HTML != nil || res.Error == nil || res.Error.Name != "ReferenceError"):
				t.Errorf("%s: got html %v error %+v, want null html and a ReferenceError", j.token, res.HTML, res.Error)
			}
		}
	})

	bad := []struct {
		name, body string
		status     int
	}{
		{"not JSON", `{"a": `, 400},
		{"not an object", `[1, 2]`, 400},
		{"too large", `{"a": "` + strings.Repeat("x", 1<<20) + `"}`, 413},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			r := w.post("/batch", "application/json", tt.body)
			if r.err != nil {
				t.Fatal(r.err)
			}
			var got hypernovaResponse
			if err := json.Unmarshal([]byte(r.body), &got); err != nil {
				t.Fatalf("decode %.200q: %v", r.body, err)
			}
			if r.status != tt.status || got.Success || got.Error == nil {
				t.Errorf("got %d success %v error %+v, want %d, false and an error", r.status, got.Success, got.Error, tt.status)
			}
		})
	}
}

func TestWorkerListensOnPort(t *testing.T) {
	dir := requireNode(t)
	addr := testutil.FreeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command("node", "worker.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "PORT="+port, "SLUICE_SOCKET=")
	c := testutil.StartProcess(t, cmd, exitDeadline)
	client := &http.Client{Transport: &http.Transport{}}
	var r reply
	pollUntil(t, startDeadline, "worker answers on "+addr, func() bool {
		r = get(client, "http://"+addr+"/healthz", time.Second)
		return r.err == nil
	})
	if r.status != http.StatusOK || r.header.Get("X-Worker-Pid") != strconv.Itoa(c.PID()) {
		t.Errorf("got %d X-Worker-Pid %q, want 200 and %d", r.status, r.header.Get("X-Worker-Pid"), c.PID())
	}
}

// A worker told to stop finishes the request it is rendering, closes its
// idle keep-alive connections, and exits 0 at once rather than after its
// 65 s keep-alive timeout.
func TestWorkerDrainsOnSIGTERM(t *testing.T) {
	dir := requireNode(t)
	hook := newHoldHook(t)
	w := startWorker(t, dir, "REACT_SSR_HOLD_ADDR="+hook.addr)

	// An idle keep-alive connection, left by the health checks, plus a
	// request that is inside the worker.
	done := make(chan reply, 1)
	go func() { done <- w.get("/?hold=drain") }()
	h := hook.next(t, 10*time.Second)
	if h.name != "drain" || h.pid != strconv.Itoa(w.PID()) {
		t.Fatalf("held: got %q from pid %s, want %q from %d", h.name, h.pid, "drain", w.PID())
	}

	if err := w.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, exitDeadline, "worker stops accepting", func() bool {
		_, err := net.DialTimeout("unix", w.socket, time.Second)
		return err != nil
	})
	select {
	case r := <-done:
		t.Fatalf("the held request ended before its release: %v", r)
	case <-w.Done():
		t.Fatalf("worker exited with a request in flight: %v", w.Err())
	default:
	}

	h.release()
	r := <-done
	if msg := checkPage(r); msg != "" {
		t.Errorf("request in flight at SIGTERM: %s", msg)
	}
	if code := w.ExitCode(t, 10*time.Second); code != 0 {
		t.Errorf("exit code: got %d, want 0", code)
	}
}
