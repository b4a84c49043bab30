package client_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
)

// okBase answers every request at once, so that a benchmark measures the
// Transport's own cost.
type okBase struct{}

func (okBase) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Body: http.NoBody, Request: r}, nil
}

// BenchmarkRoundTrip compares the bare base RoundTripper with the same
// base under a Transport, for a successful request: the overhead every
// outbound call pays.
func BenchmarkRoundTrip(b *testing.B) {
	tr, err := client.New(okBase{}, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	deadline, cancel := context.WithTimeout(client.WithPriority(context.Background(), admission.Sheddable), time.Hour)
	defer cancel()
	cases := []struct {
		name   string
		rt     http.RoundTripper
		method string
		ctx    context.Context
	}{
		{"bare", okBase{}, "GET", context.Background()},
		{"transport/POST", tr, "POST", context.Background()}, // not retryable, nothing to propagate
		{"transport/GET", tr, "GET", context.Background()},   // retryable: a trace watches for writes
		{"transport/GET+propagate", tr, "GET", deadline},     // and the headers are copied and set
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			req, _ := http.NewRequestWithContext(c.ctx, c.method, "http://api.test/", nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				resp.Body.Close()
			}
		})
	}
}

// BenchmarkRoundTripParallel measures the Transport under contention: all
// goroutines share the budget, the host map and one host's mutex.
func BenchmarkRoundTripParallel(b *testing.B) {
	tr, err := client.New(okBase{}, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{{"bare", okBase{}}, {"transport", tr}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				req, _ := http.NewRequest("GET", "http://api.test/", nil)
				for pb.Next() {
					resp, err := c.rt.RoundTrip(req)
					if err != nil {
						b.Error(err)
						return
					}
					resp.Body.Close()
				}
			})
		})
	}
}

// BenchmarkLoopback puts the overhead beside a real HTTP/1.1 round trip
// over 127.0.0.1.
func BenchmarkLoopback(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "ok")
	}))
	defer srv.Close()
	base := &http.Transport{}
	defer base.CloseIdleConnections()
	tr, err := client.New(base, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		rt   http.RoundTripper
	}{{"bare", base}, {"transport", tr}} {
		b.Run(c.name, func(b *testing.B) {
			req, _ := http.NewRequest("GET", srv.URL, nil)
			b.ReportAllocs()
			for b.Loop() {
				resp, err := c.rt.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
}
