package eval

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

func TestCapacityCountsOnlySuccesses(t *testing.T) {
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(bad.Close)

	for _, newConns := range []bool{false, true} {
		t.Run(fmt.Sprintf("newConns=%v", newConns), func(t *testing.T) {
			// A server of its own: requests cut at the end of one
			// measurement must not be served into the count of the next.
			var served atomic.Int64
			ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
			const clients = 2
			r, err := Capacity(context.Background(), []string{ok.URL}, clients, 200*time.Millisecond, newConns)
			if err != nil {
				t.Fatal(err)
			}
			ok.Close() // waits for the handlers still running
			n := served.Load()
			// Every request served was counted, as a success or (a
			// connection error after the handler ran) an error, except
			// those cut by the end of the measurement: one per client.
			if r.Successes == 0 || r.Successes > n || n-r.Successes-r.Errors > clients {
				t.Errorf("got %d successes and %d errors, want the %d served (at most %d cut)", r.Successes, r.Errors, n, clients)
			}
			if want := float64(r.Successes) / r.Duration.Seconds(); r.Rate != want {
				t.Errorf("got rate %v, want %v", r.Rate, want)
			}
			r, err = Capacity(context.Background(), []string{bad.URL}, clients, 100*time.Millisecond, newConns)
			if err != nil {
				t.Fatal(err)
			}
			if r.Successes != 0 || r.Errors == 0 || r.Rate != 0 {
				t.Errorf("503s: got %d successes, %d errors, rate %v, want only errors", r.Successes, r.Errors, r.Rate)
			}
		})
	}
}

// CapacityPost sends each request as a POST of the body, with its type.
func TestCapacityPostSendsTheJob(t *testing.T) {
	var wrong atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" || string(b) != `{"job":1}` {
			wrong.Add(1)
			w.WriteHeader(http.StatusBadRequest)
		}
	}))
	t.Cleanup(srv.Close)
	r, err := CapacityPost(t.Context(), []string{srv.URL}, 2, 100*time.Millisecond, false, "application/json", []byte(`{"job":1}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.Successes == 0 || r.Errors != 0 || wrong.Load() != 0 {
		t.Errorf("got %d successes, %d errors, %d malformed requests, want only successes", r.Successes, r.Errors, wrong.Load())
	}
}

// CapacityMix appends to each request's own query one drawn from the mix,
// never one of weight 0.
func TestCapacityMixDrawsTheQuery(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.URL.RawQuery]++
		mu.Unlock()
	}))
	t.Cleanup(srv.Close)
	mix := []loadgen.Weighted{{Value: "cards=10", Weight: 3}, {Value: "cards=50", Weight: 0}, {Value: "cards=200", Weight: 1}}
	r, err := CapacityMix(t.Context(), []string{srv.URL + "/?page=7"}, 2, 200*time.Millisecond, mix)
	if err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if r.Successes < 100 {
		t.Fatalf("got %d successes, want at least 100 to see the mix", r.Successes)
	}
	if len(seen) != 2 || seen["page=7&cards=10"] == 0 || seen["page=7&cards=200"] == 0 {
		t.Errorf("got queries %v, want page=7&cards=10 and page=7&cards=200 only", seen)
	}
}

func TestWithQuery(t *testing.T) {
	for _, tc := range []struct{ u, q, want string }{
		{"http://h/", "", "http://h/"},
		{"http://h/", "cards=10", "http://h/?cards=10"},
		{"http://h/?page=7", "cards=10", "http://h/?page=7&cards=10"},
	} {
		if got := withQuery(tc.u, tc.q); got != tc.want {
			t.Errorf("withQuery(%q, %q) = %q, want %q", tc.u, tc.q, got, tc.want)
		}
	}
}

// The Node.js scenarios' load draws the mix only when there is one.
func TestMixQuery(t *testing.T) {
	if mixQuery(nil) != nil {
		t.Error("mixQuery(nil) is a tweak, want none")
	}
	mix := []loadgen.Weighted{{Value: "cards=10", Weight: 1}}
	var c loadgen.Config
	mixQuery(mix)(&c)
	if len(c.QueryMix) != 1 || c.QueryMix[0] != mix[0] {
		t.Errorf("got QueryMix %v, want %v", c.QueryMix, mix)
	}
}
