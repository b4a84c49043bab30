package reactssr

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// adaptiveFront is sluice's front in this process, in front of one real
// worker.js whose concurrency it finds (Endpoint.Adaptive).
type adaptiveFront struct {
	p     *proxy.Proxy
	c     *admission.Controller
	front *httptest.Server
}

func newAdaptiveFront(t *testing.T, w *worker) *adaptiveFront {
	t.Helper()
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(admission.MaxLimit), QueueSize: 200, QueueTimeout: 10 * time.Second, SampleWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	p, err := proxy.New(proxy.Options{Controller: c, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	p.Add(supervisor.Endpoint{ID: 1, Network: "unix", Addr: w.socket, Concurrency: 64, Adaptive: true})
	front := httptest.NewServer(p)
	t.Cleanup(func() {
		front.Close()
		p.CloseIdleConnections()
	})
	return &adaptiveFront{p: p, c: c, front: front}
}

// drive keeps n clients busy with path for d and returns the worker's
// limit sampled every 100 ms, and any Sluice-Saturation header a client
// saw.
func (f *adaptiveFront) drive(t *testing.T, n int, d time.Duration, path string) (limits []int, leaked []string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := make(chan struct{})
	failures := 0
	for range n {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				r := get(client, f.front.URL+path, 10*time.Second)
				mu.Lock()
				if r.err != nil || r.status != http.StatusOK {
					failures++
				}
				if v := r.header.Get(proxy.HeaderSaturation); v != "" {
					leaked = append(leaked, v)
				}
				mu.Unlock()
			}
		})
	}
	tick := time.NewTicker(100 * time.Millisecond)
	end := time.After(d)
loop:
	for {
		select {
		case <-tick.C:
			limits = append(limits, f.p.Stats().Endpoints[0].Limit)
		case <-end:
			break loop
		}
	}
	tick.Stop()
	close(stop)
	wg.Wait()
	if failures > 0 {
		t.Errorf("%d requests to %s failed", failures, path)
	}
	return limits, leaked
}

// A real Node.js worker behind sluice's per-worker limit: one whose
// requests await I/O is given many at once, one whose requests render on
// the CPU stays at one at a time, and the saturation it reports never
// reaches a client.
func TestAdaptiveConcurrencyOnRealWorkers(t *testing.T) {
	dir := requireNode(t)
	if testing.Short() {
		t.Skip("starts a real worker and loads it for seconds")
	}
	t.Run("async", func(t *testing.T) {
		f := newAdaptiveFront(t, startWorker(t, dir))
		limits, leaked := f.drive(t, 24, 4*time.Second, "/?io=60&cards=20")
		t.Logf("async limits %v", limits)
		if got := limits[len(limits)-1]; got <= 4 {
			t.Errorf("awaiting I/O, 24 clients: limit %d at the end, want above 4 (trace %v)", got, limits)
		}
		if len(leaked) > 0 {
			t.Errorf("clients saw %s: %q", proxy.HeaderSaturation, leaked[0])
		}
		if e := f.p.Stats().Endpoints[0]; e.Saturation < 0 || e.BadReports != 0 {
			t.Errorf("got saturation %v and %d bad reports, want reports read", e.Saturation, e.BadReports)
		}
	})
	t.Run("cpu-bound", func(t *testing.T) {
		f := newAdaptiveFront(t, startWorker(t, dir))
		limits, leaked := f.drive(t, 8, 4*time.Second, "/?page=1")
		t.Logf("cpu limits %v", limits)
		// It comes down from its first ramp's few requests, in a second
		// or two (longer on a loaded machine), and stays at 1.
		first := slices.Index(limits, 1)
		if first < 0 || len(limits)-first < 10 {
			t.Fatalf("rendering on the CPU, 8 clients: limit 1 first at sample %d of %d, want it with ten samples to spare (trace %v)", first, len(limits), limits)
		}
		atOne := 0
		for _, l := range limits[first:] {
			if l == 1 {
				atOne++
			}
		}
		if after := len(limits) - first; atOne*10 < after*8 {
			t.Errorf("rendering on the CPU, 8 clients: limit 1 in %d of the %d samples since it first was, want at least 80%% (trace %v)", atOne, after, limits)
		}
		if len(leaked) > 0 {
			t.Errorf("clients saw %s: %q", proxy.HeaderSaturation, leaked[0])
		}
	})
}
