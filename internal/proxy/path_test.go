package proxy_test

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
)

// pathWorker records the raw request target of each request it receives:
// the path as a worker's router sees it before any decoding.
type pathWorker struct {
	mu   sync.Mutex
	raws []string
}

func (w *pathWorker) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	w.raws = append(w.raws, r.RequestURI)
	w.mu.Unlock()
}

func (w *pathWorker) take() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	raws := w.raws
	w.raws = nil
	return raws
}

// pathRig is a Proxy in front of a pathWorker, whose Classify records the
// path each request was classified by.
type pathRig struct {
	g          *rig
	wk         *pathWorker
	mu         sync.Mutex
	classified []string
}

func newPathRig(t *testing.T) *pathRig {
	pr := &pathRig{wk: &pathWorker{}}
	pr.g = newRig(t, proxy.Options{Timeout: time.Second, Classify: func(r *http.Request) admission.Request {
		pr.mu.Lock()
		pr.classified = append(pr.classified, admission.CleanPath(r.URL.Path))
		pr.mu.Unlock()
		return admission.Request{}
	}}, admission.Options{})
	wl := pr.g.net.Listen("pathworker")
	srv := &http.Server{Handler: pr.wk}
	go srv.Serve(wl)
	t.Cleanup(func() { srv.Close() })
	pr.g.p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: "pathworker", Concurrency: 1})
	return pr
}

// do sends GET target, parsed as net/http's server parses a request line,
// and returns the status, the path the classifier matched ("" when it was
// not asked) and the raw path the worker got ("" when it got nothing).
// ok is false when net/http would not parse the request line at all.
func (pr *pathRig) do(target string) (code int, classified, raw string, ok bool) {
	r, err := http.ReadRequest(bufio.NewReader(strings.NewReader("GET " + target + " HTTP/1.1\r\nHost: a\r\n\r\n")))
	if err != nil {
		return 0, "", "", false
	}
	r.RemoteAddr = "192.0.2.1:1234"
	code, _ = pr.g.send(r.WithContext(context.Background()), nil).result()
	pr.mu.Lock()
	if n := len(pr.classified); n > 0 {
		classified = pr.classified[n-1]
	}
	pr.classified = nil
	pr.mu.Unlock()
	if raws := pr.wk.take(); len(raws) > 0 {
		raw, _, _ = strings.Cut(raws[len(raws)-1], "?")
	}
	return code, classified, raw, true
}

// checkSamePath fails t unless a worker's router, whichever way it reads
// raw (segment by segment as Express does, or decoded first, or cleaned
// as Go's ServeMux), finds the path the classifier matched.
func checkSamePath(t *testing.T, target, classified, raw string) {
	t.Helper()
	segs := strings.Split(raw, "/")
	for i, s := range segs {
		d, err := url.PathUnescape(s)
		if err != nil {
			t.Errorf("%q: the worker got %q, which does not decode: %v", target, raw, err)
			return
		}
		segs[i] = d
	}
	if got := strings.Join(segs, "/"); got != classified {
		t.Errorf("%q: the worker got %q, segment by segment %q; the classifier matched %q", target, raw, got, classified)
	}
	if admission.CleanPath(classified) != classified {
		t.Errorf("%q: the classifier matched %q, which a worker cleans to %q", target, classified, admission.CleanPath(classified))
	}
	for _, prefix := range []string{"/api/", "/static/", "/static"} {
		// A router matching the raw path against a route's literal text.
		if got, want := len(raw) >= len(prefix) && strings.EqualFold(raw[:len(prefix)], prefix), admission.MatchPathPrefix(prefix, classified); got != want {
			t.Errorf("%q: route %s matches the worker's raw %q: %v; the classifier's %q: %v", target, prefix, raw, got, classified, want)
		}
	}
}

// A path is forwarded only in a form every worker reads as the classifier
// does: dot segments, empty segments and encoded slashes are refused, an
// encoded letter or digit is decoded (see path.go).
func TestPathClassifiedAsForwarded(t *testing.T) {
	tests := []struct {
		target string
		code   int
		raw    string // what the worker gets, when code is 200
	}{
		// The attack trial's: classified as /static/, served as /api/*.
		{"/api/../static/x", 400, ""},
		{"/api/%2e%2e/static/x", 400, ""},
		{"/api/%2E%2e/static/x", 400, ""},
		{"/api/..%2fstatic/x", 400, ""},
		{"/api/..%2Fstatic/x", 400, ""},
		{"/api/.%2e/static/x", 400, ""},
		{"/static/%2e%2e/api/x", 400, ""},
		{"/api/./x", 400, ""},
		{"/api/%2e/x", 400, ""},
		{"/api/..;/static/x", 400, ""},
		{"/api/..", 400, ""},
		{"/api/.", 400, ""},
		{"//static/x", 400, ""},
		{"/static//x", 400, ""},
		{"/static%2fx", 400, ""},
		{"/static%5cx", 400, ""},
		{"/api/..%5cstatic/x", 400, ""},
		{"/api/..\\static/x", 400, ""},
		// Forwarded, in normal form.
		{"/static/x", 200, "/static/x"},
		{"/static/", 200, "/static/"},
		{"/", 200, "/"},
		{"/%73tatic/x", 200, "/static/x"},
		{"/st%41tic/x", 200, "/stAtic/x"},
		{"/api/x%2ejs", 200, "/api/x.js"},
		{"/api/...", 200, "/api/..."},
		{"/api/..x", 200, "/api/..x"},
		{"/api/x;v=1", 200, "/api/x;v=1"},
		{"/api/a%20b", 200, "/api/a%20b"},
		{"/api/%c3%a9", 200, "/api/%c3%a9"},
		{"/api/x?a=/../static", 200, "/api/x"},
		{"http://a/static/x", 200, "/static/x"},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				pr := newPathRig(t)
				code, classified, raw, ok := pr.do(tt.target)
				if !ok {
					t.Fatalf("net/http does not parse %q", tt.target)
				}
				if code != tt.code {
					t.Fatalf("got %d, want %d", code, tt.code)
				}
				if code != http.StatusOK {
					if classified != "" || raw != "" {
						t.Errorf("refused, yet classified as %q and forwarded as %q", classified, raw)
					}
					return
				}
				if raw != tt.raw {
					t.Errorf("the worker got %q, want %q", raw, tt.raw)
				}
				checkSamePath(t, tt.target, classified, raw)
			})
		})
	}
}

// FuzzPathClassifiedAsForwarded checks, for any request target net/http
// parses, that a request the Proxy forwards reaches its worker with the
// path it was classified by (checkSamePath), and that a refused one
// reached neither the classifier nor the worker.
func FuzzPathClassifiedAsForwarded(f *testing.F) {
	for _, s := range []string{
		"/api/../static/x", "/api/%2e%2e/static/x", "/api/..%2fstatic/x", "/%61pi/x",
		"//x", "/a/./b", "/a;b/..;/c", "/a%252e%252e/b", "/a/%zz", "/\\a", "/a?b=%2e%2e",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, target string) {
		synctest.Test(t, func(t *testing.T) {
			pr := newPathRig(t)
			code, classified, raw, ok := pr.do(target)
			if !ok {
				return
			}
			switch code {
			case http.StatusOK:
				checkSamePath(t, target, classified, raw)
			default:
				if slices.Contains([]int{http.StatusBadRequest, http.StatusMethodNotAllowed}, code) && (classified != "" || raw != "") {
					t.Errorf("%q: refused %d, yet classified as %q and forwarded as %q", target, code, classified, raw)
				}
			}
		})
	})
}
