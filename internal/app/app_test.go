package app

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/testutil"
)

func TestOptionsValidate(t *testing.T) {
	lib := config.Default()
	front, err := config.Parse("t", []byte("upstreams: {servers: [\"127.0.0.1:1\"]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		o    Options
		want []string
	}{
		{"zero", Options{}, []string{"Options.Config is required"}},
		{"library mode without Library", Options{Config: lib}, []string{"Options.Library is required in library mode"}},
		{"library mode", Options{Config: lib, Library: testLibrary}, nil},
		{"front mode needs no Library", Options{Config: front}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.o.Validate()
			if len(tt.want) == 0 && err != nil {
				t.Fatalf("got %v, want nil", err)
			}
			for _, w := range tt.want {
				if err == nil || !strings.Contains(err.Error(), w) {
					t.Errorf("got %v, want it to say %q", err, w)
				}
			}
		})
	}
}

// seen records, from WrapFront, each request's status and the shed reason
// its Info was given by the handlers inside.
type seen struct {
	mu      sync.Mutex
	status  []int
	shed    []string
	sameIDs bool // the response's X-Request-Id is the Info's WrapFront made
}

func (s *seen) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, info := reqinfo.New(r.Context(), time.Now(), "", "", false)
		rec := &statusRecorder{ResponseWriter: w}
		h.ServeHTTP(rec, r.WithContext(ctx))
		s.mu.Lock()
		defer s.mu.Unlock()
		s.status = append(s.status, rec.status)
		s.shed = append(s.shed, info.Shed)
		s.sameIDs = w.Header().Get(reqinfo.HeaderRequestID) == info.ID
	})
}

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

// WrapFront sees every request, outermost, in library mode: one served,
// one shed while the only slot is taken; its Info is the one the inner
// handlers fill in (the shed reason). It stays in place across a reload.
func TestWrapFrontLibraryMode(t *testing.T) {
	path := writeConfig(t, `server: {maxConcurrentRequests: 1, backpressure: {enabled: false}}
admin: {listen: "off"}
`)
	loaded, err := config.ResolveWith(path, config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	started, release := make(chan struct{}), make(chan struct{})
	blocking := func(admit func(http.Handler) http.Handler) http.Handler {
		return admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/hold" {
				close(started)
				<-release
			}
			io.WriteString(w, "ok")
		}))
	}
	var s seen
	a, err := New(Options{Config: loaded.Config, Source: loaded.Source, Library: blocking, WrapFront: s.wrap, Reload: &Reload{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.ctrl.Close()
	held := make(chan int)
	go func() {
		rec := httptest.NewRecorder()
		a.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/hold", nil))
		held <- rec.Code
	}()
	<-started
	rec := httptest.NewRecorder()
	a.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("with the only slot taken: got %d, want 503", rec.Code)
	}
	close(release)
	if code := <-held; code != http.StatusOK {
		t.Fatalf("the held request: got %d, want 200", code)
	}
	s.mu.Lock()
	if len(s.status) != 2 || s.status[0] != http.StatusServiceUnavailable || s.shed[0] == "" || (s.status[1] != 0 && s.status[1] != http.StatusOK) || s.shed[1] != "" || !s.sameIDs {
		t.Errorf("WrapFront saw statuses %v (0 is 200), shed %q, same IDs %v; want the shed 503 with its reason, then the served one", s.status, s.shed, s.sameIDs)
	}
	s.mu.Unlock()

	rewrite(t, path, "server: {maxConcurrentRequests: 1, backpressure: {enabled: false}, accessLog: true}\nadmin: {listen: \"off\"}\n")
	if _, err := a.reload(); err != nil {
		t.Fatal(err)
	}
	a.srv.Handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/", nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.status) != 3 {
		t.Errorf("after a reload: WrapFront saw %d requests, want 3", len(s.status))
	}
}

// In front mode WrapFront wraps the proxy's answers too: with no upstream
// up yet, the 503 "no worker".
func TestWrapFrontFrontMode(t *testing.T) {
	cfg, err := config.Parse("t", []byte("upstreams: {servers: [\"127.0.0.1:1\"]}\nadmin: {listen: \"off\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var s seen
	a, err := New(Options{Config: cfg, WrapFront: s.wrap})
	if err != nil {
		t.Fatal(err)
	}
	defer a.ctrl.Close()
	rec := httptest.NewRecorder()
	a.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.status) != 1 || s.status[0] != rec.Code || rec.Code < 500 || !s.sameIDs {
		t.Errorf("WrapFront saw %v for a %d, same IDs %v; want the proxy's answer, with the Info's ID on it", s.status, rec.Code, s.sameIDs)
	}
}

// runLibrary starts Run, under ctx, of an App serving testLibrary with
// the config src on a listener of its own, and returns the App, its
// listener, its log and Run's result to come.
func runLibrary(t *testing.T, ctx context.Context, src string) (*App, net.Listener, *testutil.Buffer, <-chan error) {
	t.Helper()
	cfg, err := config.Parse("t", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	a, err := New(Options{Config: cfg, Library: testLibrary, Listener: ln, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Hangup: make(chan os.Signal)})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	return a, ln, logs, done
}

// Run serves on Options.Listener until its context is done, drains, and
// returns nil once every actor has stopped: the listener is closed, and
// so is the admin listener; the SIGHUP loop has ended.
func TestRunDrains(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, ln, logs, done := runLibrary(t, ctx, "server: {drainDelay: 0s}\nadmin: {listen: \"127.0.0.1:0\"}\n")
	// The listener is open before Run: the request waits in its backlog
	// until the server takes it.
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != page {
		t.Fatalf("got %d %q, want 200 and the page", resp.StatusCode, body)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after a complete drain: got %v, want nil", err)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("the listener still accepts after Run returned")
	}
	out := logs.String()
	m := regexp.MustCompile(`msg="admin: serving" addr=(\S+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the log does not say where the admin listener was:\n%s", out)
	}
	if _, err := net.Dial("tcp", m[1]); err == nil {
		t.Error("the admin listener still accepts after Run returned")
	}
	if !strings.Contains(out, "drained; exiting") {
		t.Errorf("the log lacks the drain's end:\n%s", out)
	}
}

// A cut's log says why the drain was cut short, as the error does: a
// second signal is not a shutdownTimeout that passed with requests still
// running.
func TestRunCutSaysWhy(t *testing.T) {
	a, ln, logs, done := runLibrary(t, context.Background(), "server: {drainDelay: 0s}\nadmin: {listen: off}\n")
	// Served once: the server is running when it is cut.
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	a.Cut()
	if err := <-done; err == nil {
		t.Fatal("Run after a cut: got nil, want the cut's error")
	}
	out := logs.String()
	if !strings.Contains(out, `msg="drain cut short"`) || !strings.Contains(out, "Cut called before the drain") {
		t.Errorf("the log does not say the drain was cut, and why:\n%s", out)
	}
	if strings.Contains(out, "shutdownTimeout") {
		t.Errorf("the log blames shutdownTimeout for a cut:\n%s", out)
	}
}

// The admin listener answers through the whole drain: it stops only once
// the server has finished.
func TestRunAdminAnswersThroughTheDrain(t *testing.T) {
	adm := testutil.FreeAddr(t)
	cfg, err := config.Parse("t", []byte("server: {drainDelay: 0s}\nadmin: {listen: \""+adm+"\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	inFlight, release := make(chan struct{}), make(chan struct{})
	slow := func(admit func(http.Handler) http.Handler) http.Handler {
		return admit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			close(inFlight)
			<-release
		}))
	}
	a, err := New(Options{Config: cfg, Library: slow, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	draining := make(chan struct{})
	a.srv.OnDrain = func() { close(draining) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	front := make(chan int, 1)
	go func() { code, _ := testutil.Get(context.Background(), "http://"+ln.Addr().String()+"/"); front <- code }()
	<-inFlight
	cancel()
	<-draining
	if code, body := testutil.Get(context.Background(), "http://"+adm+"/stats"); code != http.StatusOK {
		t.Errorf("admin /stats during the drain: got %d %s, want 200", code, body)
	}
	close(release)
	if code := <-front; code != http.StatusOK {
		t.Errorf("the request in flight: got %d, want 200", code)
	}
	if err := <-done; err != nil {
		t.Errorf("Run after a complete drain: got %v, want nil", err)
	}
}

// In front mode the server stops the pool after the drain, and the pool's
// Run returning then is its end, not a failure: Run returns nil.
func TestRunFrontDrains(t *testing.T) {
	cfg, err := config.Parse("t", []byte(`server: {drainDelay: 0s}
admin: {listen: "off"}
upstreams:
  servers: ["127.0.0.1:1"]
  healthCheck: {interval: 1h}
`))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Config: cfg, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // drain at once
	if err := a.Run(ctx); err != nil {
		t.Errorf("Run after a complete drain: got %v, want nil", err)
	}
}

// A pool that fails to start stops the group: the server drains at once
// and Run returns the pool's error.
func TestRunPoolFailureDrains(t *testing.T) {
	path := writeConfig(t, `server: {listen: "127.0.0.1:0", drainDelay: 0s}
admin: {listen: "off"}
workers: {command: [/bin/true], count: 1, address: unix}
`)
	loaded, err := config.ResolveWith(path, config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	// The supervisor makes its socket directory in TMPDIR when it starts.
	t.Setenv("TMPDIR", "/nonexistent/sluice-test")
	a, err := New(Options{Config: loaded.Config, Source: loaded.Source})
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "socket directory") {
		t.Errorf("got %v, want the supervisor's socket directory error", err)
	}
}

// endsAtOnce is a mode whose run returns nil at once, as no pool may
// while the server serves.
type endsAtOnce struct{ mode }

func (endsAtOnce) run(context.Context) error { return nil }

// A pool that ends while the server still serves has failed: the server
// drains, and Run says so.
func TestRunPoolEndingOnItsOwnDrains(t *testing.T) {
	cfg, err := config.Parse("t", []byte("server: {listen: \"127.0.0.1:0\", drainDelay: 0s}\nadmin: {listen: \"off\"}\n"))
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(Options{Config: cfg, Library: testLibrary})
	if err != nil {
		t.Fatal(err)
	}
	a.mode = endsAtOnce{a.mode}
	if err := a.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "the pool stopped on its own") {
		t.Errorf("got %v, want the pool's end as an error", err)
	}
}

// A task runs under the group's context, is cancelled when the group
// stops, and is waited for; none starts before Run or once it stops.
func TestTasks(t *testing.T) {
	var ts tasks
	if ts.Go(func(context.Context) {}) {
		t.Fatal("Go before start: got true, want false")
	}
	ctx, cancel := context.WithCancel(context.Background())
	ts.start(ctx)
	running, finished := make(chan struct{}), make(chan struct{})
	if !ts.Go(func(ctx context.Context) { close(running); <-ctx.Done(); close(finished) }) {
		t.Fatal("Go while running: got false, want true")
	}
	<-running
	cancel()
	ts.wait()
	select {
	case <-finished:
	default:
		t.Error("wait returned before the task finished")
	}
	if ts.Go(func(context.Context) { t.Error("a task ran after stop") }) {
		t.Error("Go after stop: got true, want false")
	}
}
