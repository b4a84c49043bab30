package app

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/config"
	"github.com/sluicehq/sluice/internal/testutil"
)

// reloadService builds (does not run) the App `sluice serve -c path`
// would, with reload enabled and testLibrary in library mode; logs
// collects its records.
func reloadService(t *testing.T, path string) (*App, *testutil.Buffer) {
	t.Helper()
	loaded, err := config.ResolveWith(path, config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	logs := &testutil.Buffer{}
	s, err := New(Options{Config: loaded.Config, Source: loaded.Source, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		WorkerOutput: io.Discard, Library: testLibrary, Reload: &Reload{Path: path}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.ctrl.Close)
	return s, logs
}

// priorityOf is the priority the service in force gives a request.
func priorityOf(s *App, path string) admission.Priority {
	return s.live.classify(httptest.NewRequest("GET", path, nil)).Priority
}

const reloadBase = `server: {listen: "127.0.0.1:0"}
admin: {listen: "off"}
compression: {minLength: 0}
routes:
  - match: {pathPrefix: /api}
    priority: sheddable
`

// An invalid file changes nothing: every error is logged at its file:line
// and the service goes on serving with the configuration it had.
func TestReloadInvalidFileKeepsConfig(t *testing.T) {
	path := writeConfig(t, reloadBase)
	s, logs := reloadService(t, path)
	rewrite(t, path, `server: {listen: "127.0.0.1:0", maxHeaderBytes: -1}
admin: {listen: "off"}
compression: {minLength: 0}
routes:
  - match: {pathPrefix: /api}
    priority: critical
    cost: 0
`)
	_, err := s.reload()
	if err == nil {
		t.Fatal("reload of an invalid file: got nil, want an error")
	}
	if got := len(config.List(err)); got != 2 {
		t.Errorf("got %d errors, want 2: %v", got, err)
	}
	for _, want := range []string{"at=" + path + ":1 key=server.maxHeaderBytes", "at=" + path + ":7 key=routes[0].cost", "the running configuration is kept"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the log lacks %q:\n%s", want, logs)
		}
	}
	if got := priorityOf(s, "/api/x"); got != admission.Sheddable {
		t.Errorf("after an invalid reload: got priority %v, want sheddable still", got)
	}
	rec := httptest.NewRecorder()
	s.srv.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/?cpu=0", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("serving after an invalid reload: got %d, want 200", rec.Code)
	}
}

// A valid file's live keys take effect on the next request.
func TestReloadAppliesLiveKeys(t *testing.T) {
	path := writeConfig(t, reloadBase)
	s, logs := reloadService(t, path)
	serve := func(r *http.Request) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		s.srv.Handler.ServeHTTP(rec, r)
		return rec
	}
	gz := func() *http.Request {
		r := httptest.NewRequest("GET", "/?cpu=0", nil)
		r.Header.Set("Accept-Encoding", "gzip")
		return r
	}
	if got := serve(gz()).Header().Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("before: got Content-Encoding %q, want gzip", got)
	}
	trusted := httptest.NewRequest("GET", "/", nil)
	trusted.RemoteAddr = "10.1.2.3:4567"
	trusted.Header.Set(admission.HeaderPriority, "sheddable")
	if got := s.live.classify(trusted).Priority; got != admission.Critical {
		t.Fatalf("before: an untrusted peer's Sluice-Priority got %v, want it ignored (critical)", got)
	}

	rewrite(t, path, `server: {listen: "127.0.0.1:0", accessLog: true, trustedPeers: [10.0.0.0/8]}
admin: {listen: "off"}
compression: {enabled: false}
tenants: {weights: {gold: 4}}
routes:
  - match: {pathPrefix: /api}
    priority: critical-plus
`)
	rep, err := s.reload()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"server.trustedPeers", "server.accessLog", "tenants.weights", "routes[0].priority", "compression.enabled", "compression.minLength"}
	for _, k := range want {
		if !slices.Contains(rep.Applied, k) {
			t.Errorf("applied %q, want %q among them", rep.Applied, k)
		}
	}
	if len(rep.Restart) != 0 {
		t.Errorf("got restart-only keys %q, want none", rep.Restart)
	}
	if got := priorityOf(s, "/api/x"); got != admission.CriticalPlus {
		t.Errorf("route priority: got %v, want critical-plus", got)
	}
	if got := s.live.classify(trusted).Priority; got != admission.Sheddable {
		t.Errorf("a newly trusted peer's Sluice-Priority: got %v, want sheddable", got)
	}
	if got := s.live.tenantWeight("gold"); got != 4 {
		t.Errorf("tenant weight: got %v, want 4", got)
	}
	if got := serve(gz()).Header().Get("Content-Encoding"); got != "" {
		t.Errorf("compression off: got Content-Encoding %q, want none", got)
	}
	if !strings.Contains(logs.String(), "msg=access") {
		t.Errorf("access log on: no access record in\n%s", logs)
	}
}

// In front mode the Controller's limit is server.maxConcurrentRequests, a
// fixed limit: a reload sets it.
func TestReloadSetsFixedLimit(t *testing.T) {
	yaml := `server: {listen: "127.0.0.1:0", maxConcurrentRequests: %d}
admin: {listen: "off"}
upstreams: {servers: ["127.0.0.1:1"]}
`
	path := writeConfig(t, fmt.Sprintf(yaml, 10))
	s, _ := reloadService(t, path)
	rewrite(t, path, fmt.Sprintf(yaml, 3))
	rep, err := s.reload()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Applied, []string{"server.maxConcurrentRequests"}) {
		t.Errorf("applied %q, want [server.maxConcurrentRequests]", rep.Applied)
	}
	if got := s.live.fixed.Limit(); got != 3 {
		t.Errorf("the Controller's fixed limit: got %d, want 3", got)
	}
}

// A fixed limit changes live only while it stays a fixed limit of the same
// kind: a change of algorithm needs a restart.
func TestReloadLiveLimit(t *testing.T) {
	const front = "upstreams: {servers: [\"127.0.0.1:1\"]}\n"
	for _, tt := range []struct {
		name, start, next string
		want              int
	}{
		{"front mode", front + "server: {maxConcurrentRequests: 10}", front + "server: {maxConcurrentRequests: 3}", 3},
		{"library, backpressure off", "server: {maxConcurrentRequests: 10, backpressure: {enabled: false}}", "server: {maxConcurrentRequests: 5, backpressure: {enabled: false}}", 5},
		{"library, algorithm fixed", "server: {backpressure: {algorithm: fixed, initialLimit: 4}}", "server: {backpressure: {algorithm: fixed, initialLimit: 6}}", 6},
		{"library, backpressure turned on", "server: {maxConcurrentRequests: 10, backpressure: {enabled: false}}", "server: {maxConcurrentRequests: 10, backpressure: {algorithm: fixed}}", -1},
		{"library, an adaptive algorithm", "server: {maxConcurrentRequests: 10}", "server: {maxConcurrentRequests: 5}", -1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := reloadService(t, writeConfig(t, "admin: {listen: \"off\"}\n"+tt.start+"\n"))
			next, err := config.Parse("next.yaml", []byte(tt.next))
			if err != nil {
				t.Fatal(err)
			}
			if got := s.live.liveLimit(s.cfg, next); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

// A key that needs a restart is warned about, by name, at every reload
// while the file differs from what runs; its running value is kept; the
// live keys beside it are applied.
func TestReloadRestartOnlyKeyWarned(t *testing.T) {
	path := writeConfig(t, reloadBase)
	s, logs := reloadService(t, path)
	changed := `server: {listen: "127.0.0.1:1", keepAliveTimeout: 5s}
admin: {listen: "off"}
compression: {minLength: 0}
routes:
  - match: {pathPrefix: /api}
    priority: critical
    fallback: {body: shell}
`
	rewrite(t, path, changed)
	for i := range 2 {
		rep, err := s.reload()
		if err != nil {
			t.Fatal(err)
		}
		wantRestart := []string{"server.listen", "server.keepAliveTimeout"}
		if !slices.Equal(rep.Restart, wantRestart) {
			t.Errorf("reload %d: restart-only keys %q, want %q", i, rep.Restart, wantRestart)
		}
		if want := []string{"routes[0].priority", "routes[0].fallback"}; i == 0 && !slices.Equal(rep.Applied, want) {
			t.Errorf("reload %d: applied %q, want %q", i, rep.Applied, want)
		}
	}
	for _, k := range []string{"server.listen", "server.keepAliveTimeout"} {
		if n := strings.Count(logs.String(), "a key needs a restart; its running value is kept\" key="+k+"\n"); n != 2 {
			t.Errorf("got %d warnings naming %s over two reloads, want 2:\n%s", n, k, logs)
		}
	}
	if s.srv.Addr != "127.0.0.1:0" || s.srv.KeepAliveTimeout != 65*time.Second {
		t.Errorf("running server: got %s and %v, want the values it started with", s.srv.Addr, s.srv.KeepAliveTimeout)
	}
	if got := priorityOf(s, "/api"); got != admission.Critical {
		t.Errorf("the live key beside them: got %v, want critical", got)
	}
}

func TestReloadClassOf(t *testing.T) {
	workers := writeConfig(t, "admin: {listen: \"off\"}\nworkers: {command: [sh, w.js], count: 1}\n")
	s, _ := reloadService(t, workers)
	library := writeConfig(t, "admin: {listen: \"off\"}\n")
	lib, _ := reloadService(t, library)
	cfg := s.cfg
	for _, tt := range []struct {
		s    *App
		path string
		want keyClass
	}{
		{s, "routes[3].match.method", keyLive},
		{s, "routes[3]", keyLive},
		{s, "routes[0].fallback.body", keyLive},
		{s, "compression.gzipLevel", keyLive},
		{s, "server.maxConcurrentRequests", keyLive}, // front mode: a fixed limit
		{lib, "server.maxConcurrentRequests", keyRestart},
		{s, "server.listen", keyRestart},
		{s, "server.tls.certFile", keyRestart}, // TLS was off: switching it on needs a restart
		{s, "server.backpressure.queueSize", keyRestart},
		{s, "tenants.maxTracked", keyRestart},
		{s, "workers.command", keyRoll},
		{s, "workers.env", keyRoll},
		{s, "workers.count", keyRestart},
		{s, "admin.listen", keyRestart},
		{s, "proxy.timeout", keyRestart},
	} {
		if got := tt.s.live.classOf(tt.path, cfg, cfg); got != tt.want {
			t.Errorf("%s: got class %d, want %d", tt.path, got, tt.want)
		}
	}
}

// A change of the workers' env or command gives the supervisor the new
// command and asks for a roll; a file that leaves them alone does not.
func TestReloadSetsWorkerCommand(t *testing.T) {
	yaml := "admin: {listen: \"off\"}\nworkers:\n  command: [sh, w.js]\n  count: 1\n  env: {TAG: %s}\n"
	path := writeConfig(t, fmt.Sprintf(yaml, "v1"))
	s, _ := reloadService(t, path)
	if got := s.Supervisor().Command(); !slices.Equal(got.Args, []string{"sh", "w.js"}) || !slices.Equal(got.Env, []string{"TAG=v1"}) {
		t.Fatalf("command at start: got %+v", got)
	}
	rep, err := s.reload()
	if err != nil || rep.Roll {
		t.Fatalf("reload of the same file: got roll %v, err %v; want no roll", rep.Roll, err)
	}
	rewrite(t, path, fmt.Sprintf(yaml, "v2"))
	if rep, err = s.reload(); err != nil || !rep.Roll {
		t.Fatalf("reload with a new env: got roll %v, err %v; want a roll", rep.Roll, err)
	}
	if got := s.Supervisor().Command(); !slices.Equal(got.Env, []string{"TAG=v2"}) {
		t.Errorf("command after the reload: got %+v, want TAG=v2", got)
	}
	if got := s.live.prevCmd; !slices.Equal(got.Env, []string{"TAG=v1"}) {
		t.Errorf("the command kept to put back: got %+v, want TAG=v1", got)
	}
}

// POST /config/reload is a state-changing admin request: refused from
// another site or for a foreign Host, like POST /workers/restart; from the
// operator's tools it reloads and says what it did, or lists the file's
// errors with their file:line.
func TestReloadAdminEndpoint(t *testing.T) {
	path := writeConfig(t, strings.Replace(reloadBase, `admin: {listen: "off"}`, `admin: {listen: "127.0.0.1:0"}`, 1))
	s, _ := reloadService(t, path)
	rewrite(t, path, strings.Replace(reloadBase, "sheddable", "critical-plus", 1))
	post := func(host string, hdr ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest("POST", "http://"+host+"/config/reload", nil)
		for i := 0; i+1 < len(hdr); i += 2 {
			r.Header.Set(hdr[i], hdr[i+1])
		}
		rec := httptest.NewRecorder()
		s.adm.srv.Handler.ServeHTTP(rec, r)
		return rec
	}
	for name, rec := range map[string]*httptest.ResponseRecorder{
		"cross-site":   post("127.0.0.1:9090", "Origin", "http://evil.example", "Sec-Fetch-Site", "cross-site"),
		"foreign Host": post("evil.example:9090"),
	} {
		if rec.Code != http.StatusForbidden {
			t.Errorf("%s: got %d, want 403", name, rec.Code)
		}
	}
	if got := priorityOf(s, "/api"); got != admission.Sheddable {
		t.Fatalf("after refused requests: got priority %v, want sheddable (not reloaded)", got)
	}
	rec := post("127.0.0.1:9090")
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "applied: routes[0].priority") {
		t.Errorf("a local POST: got %d %q, want 200 naming routes[0].priority", rec.Code, rec.Body)
	}
	if got := priorityOf(s, "/api"); got != admission.CriticalPlus {
		t.Errorf("after the reload: got priority %v, want critical-plus", got)
	}
	rewrite(t, path, reloadBase+"    cost: 0\n")
	rec = post("localhost:9090")
	if want := path + ":7: routes[0].cost"; rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("an invalid file: got %d %q, want 422 and %q", rec.Code, rec.Body, want)
	}
}

// The cost of reloadability on the request path: one atomic load and an
// indirect call for the front handler, one for the classifier, beside the
// direct calls they replace.
func BenchmarkLive(b *testing.B) {
	var l live
	cls := &admission.Classifier{Rules: []admission.Rule{{PathPrefix: "/api", Priority: admission.Sheddable}}}
	l.cls.Store(cls)
	var h http.Handler = http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
	l.top.Store(&h)
	r := httptest.NewRequest("GET", "/api/x", nil)
	w := httptest.NewRecorder()
	b.Run("handler/direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(w, r)
		}
	})
	b.Run("handler/live", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.ServeHTTP(w, r)
		}
	})
	b.Run("classify/direct", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			cls.Classify(r)
		}
	})
	b.Run("classify/live", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l.classify(r)
		}
	})
}

// A rolling restart's queue allowance is half a second, or the queue
// timeout if shorter: a request served after the longest wait still
// renders within a client's second.
func TestRollToleranceFitsAClientSecond(t *testing.T) {
	for _, tt := range []struct {
		queueTimeout string
		want         time.Duration
	}{
		{"5s", 500 * time.Millisecond},
		{"200ms", 200 * time.Millisecond},
	} {
		path := writeConfig(t, strings.Replace(reloadBase, `server: {listen: "127.0.0.1:0"}`,
			`server: {listen: "127.0.0.1:0", backpressure: {queueTimeout: `+tt.queueTimeout+`}}`, 1))
		s, _ := reloadService(t, path)
		before := time.Now()
		s.tolerateRoll(time.Minute)
		st := s.ctrl.Stats()
		if st.TolerateBound != tt.want {
			t.Errorf("queueTimeout %s: a roll tolerates waits of %v, want %v", tt.queueTimeout, st.TolerateBound, tt.want)
		}
		if !st.TolerateUntil.After(before.Add(59 * time.Second)) {
			t.Errorf("queueTimeout %s: tolerated until %v, want a minute from %v", tt.queueTimeout, st.TolerateUntil, before)
		}
	}
}
