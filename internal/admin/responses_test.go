package admin_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/internal/admin"
)

func TestResponses(t *testing.T) {
	var rs admin.Responses
	handlers := map[string]http.HandlerFunc{
		"/nothing": func(w http.ResponseWriter, r *http.Request) {},
		"/write":   func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("x")) },
		"/shed":    func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(503); w.WriteHeader(200) },
		"/hints": func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusEarlyHints)
			w.WriteHeader(http.StatusNotFound)
		},
		"/flush": func(w http.ResponseWriter, r *http.Request) {
			if err := http.NewResponseController(w).Flush(); err != nil {
				t.Errorf("flush through the wrapper: %v", err)
			}
		},
	}
	mux := http.NewServeMux()
	for p, h := range handlers {
		mux.Handle(p, h)
	}
	h := rs.Wrap(mux)
	for _, p := range []string{"/nothing", "/write", "/shed", "/shed", "/hints", "/flush", "/missing"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	values, types := scrape(t, rs.Collector("sluice"))
	diff(t, "value of", values, map[string]string{
		`sluice_requests_total{code="200"}`: "3",
		`sluice_requests_total{code="503"}`: "2",
		`sluice_requests_total{code="404"}`: "2",
	})
	if types["sluice_requests_total"] != "counter" {
		t.Errorf("type: got %q, want counter", types["sluice_requests_total"])
	}
}

// A hijacked connection (an upgrade answered on the connection itself) is
// counted as 101, not as the 200 net/http would otherwise be credited with.
func TestResponsesHijack(t *testing.T) {
	var rs admin.Responses
	wrapped := rs.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack through the wrapper: %v", err)
			return
		}
		defer c.Close()
		brw.WriteString("HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n")
		brw.Flush()
	}))
	counted := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		wrapped.ServeHTTP(w, r)
		close(counted)
	}))
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL, nil)
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "echo")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	<-counted
	values, _ := scrape(t, rs.Collector("sluice"))
	diff(t, "value of", values, map[string]string{`sluice_requests_total{code="101"}`: "1"})
}

func TestBuildInfo(t *testing.T) {
	values, _ := scrape(t, admin.NewBuildInfoCollector("sluice", "v1.2.3"))
	if len(values) != 1 {
		t.Fatalf("got %v, want one series", values)
	}
	for k, v := range values {
		if v != "1" {
			t.Errorf("%s: got %s, want 1", k, v)
		}
		for _, want := range []string{`version="v1.2.3"`, `goversion="go`, `revision="`} {
			if !contains(k, want) {
				t.Errorf("%s lacks %s", k, want)
			}
		}
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
