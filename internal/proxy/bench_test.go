package proxy_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

// benchProxy returns a front URL for a Proxy in front of worker, whose
// one endpoint has the given concurrency.
func benchProxy(b *testing.B, worker *httptest.Server, concurrency int) string {
	c, err := admission.New(admission.Options{Limit: limit.NewFixed(admission.MaxLimit), SampleWindow: -1})
	if err != nil {
		b.Fatal(err)
	}
	p, err := proxy.New(proxy.Options{Controller: c})
	if err != nil {
		b.Fatal(err)
	}
	p.Add(supervisor.Endpoint{ID: 1, Network: "tcp", Addr: worker.Listener.Addr().String(), Concurrency: concurrency})
	front := httptest.NewServer(p)
	b.Cleanup(func() {
		front.Close()
		p.CloseIdleConnections()
		c.Close()
	})
	return front.URL
}

func trivialWorker(b *testing.B) *httptest.Server {
	w := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	b.Cleanup(w.Close)
	return w
}

// BenchmarkHop is the latency the proxy hop adds for a trivial response:
// one keep-alive client, sequential requests over loopback, straight to the
// worker, through httputil.ReverseProxy (the naive reference) and through
// the Proxy. Compare their p50-ns; allocs/op covers the whole process
// (client, front, proxy and worker).
func BenchmarkHop(b *testing.B) {
	worker := trivialWorker(b)
	b.Run("direct", func(b *testing.B) { sequential(b, worker.URL) })
	b.Run("reverseproxy", func(b *testing.B) { sequential(b, reverseProxy(b, worker)) })
	b.Run("proxy", func(b *testing.B) { sequential(b, benchProxy(b, worker, 1)) })
}

// reverseProxy is the reference: net/http/httputil's ReverseProxy, which
// neither buffers nor queues nor admits.
func reverseProxy(b *testing.B, worker *httptest.Server) string {
	u, err := url.Parse(worker.URL)
	if err != nil {
		b.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	rp.Transport = tr
	front := httptest.NewServer(rp)
	b.Cleanup(func() {
		front.Close()
		tr.CloseIdleConnections()
	})
	return front.URL
}

func sequential(b *testing.B, url string) {
	tr := &http.Transport{MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	lat := make([]time.Duration, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		resp, err := client.Get(url + "/")
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			b.Fatalf("got %d, want 200", resp.StatusCode)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkHopParallel sends from many goroutines at once to one worker
// of Concurrency 64: the contended paths (admission, slot pick, release).
func BenchmarkHopParallel(b *testing.B) {
	worker := trivialWorker(b)
	for _, bc := range []struct {
		name string
		url  func() string
	}{
		{"direct", func() string { return worker.URL }},
		{"proxy", func() string { return benchProxy(b, worker, 64) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			url := bc.url() + "/"
			tr := &http.Transport{MaxIdleConnsPerHost: 64}
			defer tr.CloseIdleConnections()
			client := &http.Client{Transport: tr}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					resp, err := client.Get(url)
					if err != nil {
						b.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		})
	}
}
