package demo

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParams(t *testing.T) {
	app := &App{Work: NewWork(1), Name: "w"}
	tests := []struct {
		query string
		code  int
	}{
		{"", 200},
		{"?cpu=1&sleep=0", 200},
		{"?cpu=0.5", 200},
		{"?cpu=-1", 400},
		{"?cpu=abc", 400},
		{"?cpu=NaN", 400},
		{"?cpu=999999", 400},
		{"?sleep=9999999", 400},
	}
	for _, tt := range tests {
		rec := httptest.NewRecorder()
		app.ServeHTTP(rec, httptest.NewRequest("GET", "/"+tt.query, nil))
		if rec.Code != tt.code {
			t.Errorf("%q: got %d, want %d", tt.query, rec.Code, tt.code)
		}
	}
	if got := app.Stats().Rendered; got != 3 {
		t.Errorf("got %d rendered, want 3", got)
	}
}

// The work is CPU work, not a wall-clock spin: twice the units take about
// twice the CPU. Measured in work units, not seconds, so it cannot flake.
func TestWorkScales(t *testing.T) {
	w := NewWork(1000)
	if a, b := w.Do(time.Millisecond), w.Do(time.Millisecond); a != b {
		t.Fatalf("same work gave %x and %x, want a deterministic checksum", a, b)
	}
	if w.Do(time.Millisecond) == w.Do(2*time.Millisecond) {
		t.Fatal("1ms and 2ms of work gave the same checksum: the amount is ignored")
	}
	if c := Calibrate(20 * time.Millisecond); c.UnitsPerMilli() <= 0 {
		t.Fatalf("calibration gave %v units/ms, want > 0", c.UnitsPerMilli())
	}
}

func TestServeWorker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ServeWorker(ctx, ln, &App{Work: NewWork(100), Name: "worker 7"}) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeWorker: %v", err)
		}
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/?cpu=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "worker 7") {
		t.Fatalf("got %d %q, want the page rendered by worker 7", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + ln.Addr().String() + StatsPath)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `"rendered":1`) {
		t.Fatalf("stats: got %s, want one render counted", body)
	}
}

func TestWorkerListener(t *testing.T) {
	if _, err := workerListener(func(string) string { return "" }); err == nil {
		t.Fatal("no PORT nor SLUICE_SOCKET: got nil error, want one")
	}
	sock := t.TempDir() + "/w.sock"
	ln, err := workerListener(func(k string) string { return map[string]string{"SLUICE_SOCKET": sock}[k] })
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if ln.Addr().Network() != "unix" || ln.Addr().String() != sock {
		t.Fatalf("got %s %s, want unix %s", ln.Addr().Network(), ln.Addr(), sock)
	}
}

func TestSaturationMeter(t *testing.T) {
	var busy int64
	start := time.Unix(0, 0)
	m := &saturationMeter{busy: func() int64 { return busy }, at: start, window: 100 * time.Millisecond}
	ms := func(n int) time.Time { return start.Add(time.Duration(n) * time.Millisecond) }
	busy = int64(30 * time.Millisecond)
	if got := m.read(ms(40)); got != 0.75 {
		t.Fatalf("before the first window: got %v, want the share since start 0.75", got)
	}
	busy = int64(50 * time.Millisecond)
	if got := m.read(ms(100)); got != 0.5 {
		t.Fatalf("after one window: got %v, want 0.5", got)
	}
	busy = int64(150 * time.Millisecond) // 100 ms busy within the next 100 ms
	if got := m.read(ms(150)); got != 0.5 {
		t.Fatalf("within the window: got %v, want the last full window's 0.5", got)
	}
	if got := m.read(ms(200)); got != 1 {
		t.Fatalf("after the second window: got %v, want 1", got)
	}
}

// A worker's first request, or the first after a pause in traffic: the
// meter was last read seconds ago. The response of a 150 ms render must
// read that render (1), not the render diluted in the idle stretch before
// it (150 ms in 3.15 s, 0.048), or the front raises the limit of a worker
// that is already saturated. The handler advances a fake clock and the
// busy time as a render would.
func TestSaturationAfterIdle(t *testing.T) {
	start := time.Unix(0, 0)
	now := start
	var busy int64
	m := &saturationMeter{busy: func() int64 { return busy }, at: start, window: 100 * time.Millisecond}
	h := reportSaturation(m, func() time.Time { return now }, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get("render"))
		if err != nil {
			t.Fatal(err)
		}
		now = now.Add(d)
		busy += int64(d)
		w.Write([]byte("done"))
	}))
	get := func(render string) string {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/?render="+render, nil))
		return rec.Header().Get("Sluice-Saturation")
	}

	now = now.Add(3 * time.Second)
	if got := get("150ms"); got != "1.000" {
		t.Fatalf("a 150ms render after 3s idle: got %s, want 1.000", got)
	}
	now = now.Add(10 * time.Millisecond)
	if got := get("0s"); got != "1.000" {
		t.Fatalf("the next request, within the window: got %s, want the render's window, 1.000", got)
	}
	// Shorter than the window: the idle stretch closed at the request's
	// arrival read 0, so the response reads the share since then.
	now = now.Add(5 * time.Second)
	if got := get("50ms"); got != "1.000" {
		t.Fatalf("a 50ms render after a 5s pause: got %s, want 1.000", got)
	}
}

func TestWorkerReportsSaturation(t *testing.T) {
	h := WorkerHandler(&App{Work: NewWork(100)})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/?cpu=2", nil))
	v := rec.Header().Get("Sluice-Saturation")
	if v == "" || rec.Code != 200 {
		t.Fatalf("got %d with Sluice-Saturation %q, want 200 and a value", rec.Code, v)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", StatsPath, nil))
	if v := rec.Header().Get("Sluice-Saturation"); v != "" {
		t.Fatalf("stats carry Sluice-Saturation %q, want none", v)
	}
}

// A round that another process cut short of the core (its clock ran on
// while the calibration did not) does not lower the calibration: the
// fastest round is the core's speed.
func TestCalibrateKeepsTheFastestRound(t *testing.T) {
	// Each reading of the clock comes after a batch of 64 units, which
	// take 10 µs on the simulated core (6400 units/ms); every third round
	// is preempted for 5 ms in its middle.
	var (
		at    time.Time
		reads int
	)
	now := func() time.Time {
		reads++
		at = at.Add(10 * time.Microsecond)
		if reads%600 == 100 {
			at = at.Add(5 * time.Millisecond)
		}
		return at
	}
	w := calibrate(20*time.Millisecond, now)
	if got, want := w.UnitsPerMilli(), 6400.0; got != want {
		t.Errorf("calibration = %v units/ms, want %v (the unpreempted rounds')", got, want)
	}
	if spent := at.Sub(time.Time{}); spent < 20*time.Millisecond || spent > 20*time.Millisecond+calibrationRound {
		t.Errorf("calibrating for 20ms took %v of the clock, want 20ms to 20ms and a round", spent)
	}
}

// The stats say how long the worker spent rendering, so that a reader can
// tell a worker kept busy with slower renders from one left idle.
func TestStatsCountBusyTime(t *testing.T) {
	h := WorkerHandler(&App{Work: NewWork(100)})
	stats := func() Stats {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", StatsPath, nil))
		var s Stats
		if err := json.Unmarshal(rec.Body.Bytes(), &s); err != nil {
			t.Fatalf("stats %q: %v", rec.Body.String(), err)
		}
		return s
	}
	if got := stats().BusyNs; got != 0 {
		t.Fatalf("before any render: busy %d ns, want 0", got)
	}
	for range 2 {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/?cpu=2", nil))
	}
	if s := stats(); s.Rendered != 2 || s.BusyNs <= 0 {
		t.Errorf("after two renders: rendered %d, busy %d ns; want 2, and some", s.Rendered, s.BusyNs)
	}

	// Renders at once are counted once: the time any was under way, never
	// more than the time they all took.
	before := stats().BusyNs
	start := time.Now()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/?cpu=20", nil)) })
	}
	wg.Wait()
	took := time.Since(start)
	if busy := time.Duration(stats().BusyNs - before); busy <= 0 || busy > took {
		t.Errorf("four renders at once in %v: busy %v, want some, and no more than that", took, busy)
	}
}
