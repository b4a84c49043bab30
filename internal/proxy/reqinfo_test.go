package proxy_test

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/reqinfo"
	"github.com/sluicehq/sluice/internal/testutil"
)

// The proxy fills in the request's Info where it learns each part, and
// sends the worker the request's ID and arrival in place of the client's.
func TestRequestInfo(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, id := g.worker(1)
		a := g.get("/block/a")
		synctest.Wait()

		r := httptest.NewRequest("GET", "/sleep?d=35ms", nil)
		r.Header.Set("X-Request-Id", "forged")
		r.Header.Set("X-Request-Start", "t=1")
		received := time.Now()
		ctx, info := reqinfo.New(r.Context(), received, "", "", false)
		b := g.send(r.WithContext(ctx), nil)
		time.Sleep(2 * time.Second) // b waits in the queue behind a
		w.open("a")
		a.result()
		if code, _ := b.result(); code != 200 {
			t.Fatalf("got %d, want 200", code)
		}
		if info.QueueWait != 2*time.Second {
			t.Errorf("got queue wait %v, want 2s", info.QueueWait)
		}
		if !info.Queued.Equal(received) || !info.Dispatched.Equal(received.Add(2*time.Second)) {
			t.Errorf("got queued at %v, dispatched at %v; want %v and 2s later", info.Queued, info.Dispatched, received)
		}
		if info.Worker != id || info.WorkerTime < 35*time.Millisecond || info.WorkerTime > 36*time.Millisecond {
			t.Errorf("got worker %d for %v, want %d for 35ms", info.Worker, info.WorkerTime, id)
		}
		h := w.lastHeader()
		if got := h.Get("X-Request-Id"); got != info.ID || got == "forged" {
			t.Errorf("worker got X-Request-Id %q, want %q", got, info.ID)
		}
		want := "t=" + strconv.FormatInt(received.UnixMicro(), 10)
		if got := h.Get("X-Request-Start"); got != want {
			t.Errorf("worker got X-Request-Start %q, want %q", got, want)
		}
	})
}

// A traceparent is not trust-bearing: the worker gets the client's as it
// came, from any peer.
func TestTraceparentPassesThrough(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{})
		w, _ := g.worker(1)
		const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		r := httptest.NewRequest("GET", "/x", nil)
		r.Header.Set("Traceparent", tp)
		r.Header.Set("Tracestate", "vendor=a")
		ctx, _ := reqinfo.New(r.Context(), time.Now(), "", tp, true)
		if code, _ := g.send(r.WithContext(ctx), nil).result(); code != 200 {
			t.Fatalf("got %d, want 200", code)
		}
		h := w.lastHeader()
		if h.Get("Traceparent") != tp || h.Get("Tracestate") != "vendor=a" {
			t.Errorf("worker got traceparent %q, tracestate %q; want them untouched", h.Get("Traceparent"), h.Get("Tracestate"))
		}
	})
}

func TestRequestInfoShed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		g := newRig(t, proxy.Options{}, admission.Options{QueueSize: -1})
		w, _ := g.worker(1)
		a := g.get("/block/a")
		synctest.Wait()
		r := httptest.NewRequest("GET", "/b", nil)
		ctx, info := reqinfo.New(r.Context(), time.Now(), "", "", false)
		if code, _ := g.send(r.WithContext(ctx), nil).result(); code != 503 {
			t.Fatalf("got %d, want 503", code)
		}
		if info.Shed == "" || info.Worker != -1 {
			t.Errorf("got shed %q, worker %d; want a reason, no worker", info.Shed, info.Worker)
		}
		w.open("a")
		a.result()
	})
}

// BenchmarkProxyServeInfo is BenchmarkProxyServe/json with the request's
// Info: none (what BenchmarkProxyServe measures), one made once (what the
// proxy's part costs: no allocation), and one made per request as cmd/sluice's
// outermost handler does (reqinfo.New and the request's new context).
func BenchmarkProxyServeInfo(b *testing.B) {
	for _, mode := range []string{"none", "reused", "perRequest", "browser/none", "browser/reused"} {
		b.Run(mode, func(b *testing.B) {
			p, _ := handlerProxy(b, cannedWorker(b, cannedResponse("application/json", 250)), 8, 16)
			r := benchRequest(b)
			mode := mode
			if m, ok := strings.CutPrefix(mode, "browser/"); ok {
				// A browser's dozen headers: the map is a table either way.
				mode = m
				for _, k := range []string{"Accept-Language", "Accept-Encoding", "Cookie", "Referer", "Sec-Fetch-Mode", "Sec-Fetch-Site", "Sec-Fetch-Dest", "Cache-Control", "Priority", "Upgrade-Insecure-Requests"} {
					r.Header.Set(k, "v")
				}
			}
			if mode == "reused" {
				ctx, _ := reqinfo.New(r.Context(), time.Now(), "", "", false)
				r = r.WithContext(ctx)
			}
			w := &discardWriter{h: make(http.Header)}
			b.ReportAllocs()
			cpu := testutil.ProcessCPU()
			for b.Loop() {
				w.reset()
				rr := r
				if mode == "perRequest" {
					ctx, _ := reqinfo.New(r.Context(), time.Now(), "", "", false)
					rr = r.WithContext(ctx)
				}
				p.ServeHTTP(w, rr)
				if w.status != http.StatusOK {
					b.Fatalf("got %d, want 200", w.status)
				}
			}
			testutil.ReportCPU(b, cpu)
		})
	}
}
