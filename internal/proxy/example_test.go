package proxy_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// A Proxy in front of one single-threaded worker. The Controller's limit
// follows the worker slots: the Proxy sets the Controller's ceiling, and
// the algorithm (here a cap of 64 requests in flight) bounds it. The
// worker renders one request at a time and holds one more waiting
// (Options.Lookahead), so that it never idles between two.
func Example() {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(64), QueueTimeout: time.Second})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	p, err := proxy.New(proxy.Options{Controller: c, Timeout: 5 * time.Second})
	if err != nil {
		panic(err)
	}
	defer p.CloseIdleConnections()

	worker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "rendered %s, priority %s", r.URL.Path, r.Header.Get("Sluice-Priority"))
	}))
	defer worker.Close()
	// The supervisor calls Add once a worker is ready.
	p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: worker.Listener.Addr().String(), Concurrency: 1})

	rec := httptest.NewRecorder()
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/home", nil))
	fmt.Println(rec.Code, rec.Body.String())
	fmt.Println("limit:", c.Stats().Limit)
	// Output:
	// 200 rendered /home, priority critical
	// limit: 2
}

// A Fallback replaces shed, no-worker and timeout errors: for server-side
// rendering, a shell the browser renders itself.
func ExampleFallback() {
	c, err := admission.New(admission.Options{})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	p, err := proxy.New(proxy.Options{
		Controller: c,
		Fallbacks: []proxy.Fallback{
			{PathPrefix: "/", Body: []byte(`<div id="root"></div><script src="/app.js"></script>`)},
		},
	})
	if err != nil {
		panic(err)
	}

	rec := httptest.NewRecorder() // no worker yet
	p.ServeHTTP(rec, httptest.NewRequest("GET", "/listing/42", nil))
	fmt.Println(rec.Code, rec.Header().Get(proxy.HeaderFallback))
	fmt.Println(rec.Body.String())
	// Output:
	// 200 no-worker
	// <div id="root"></div><script src="/app.js"></script>
}
