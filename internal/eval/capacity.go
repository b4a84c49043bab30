package eval

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/internal/loadgen"
)

// CapacityResult is what a closed-loop measurement found.
type CapacityResult struct {
	// Rate is successful responses per second.
	Rate float64 `json:"rate_rps"`
	// Successes and Errors count responses (2xx) and everything else.
	Successes int64 `json:"successes"`
	Errors    int64 `json:"errors"`
	// MeanLatency is the mean time of a successful request.
	MeanLatency time.Duration `json:"mean_latency_ns"`
	Duration    time.Duration `json:"duration_ns"`
}

// Capacity measures the throughput of the servers at urls closed-loop:
// perURL clients per URL, each sending its next request as soon as the
// previous one is answered, for d, over keep-alive connections unless
// newConns. With one client per single-threaded worker this is the most
// the workers can render with no proxy and no queueing: the capacity that
// `sluice demo`'s load, and the evaluation suite's load multiples, refer to.
func Capacity(ctx context.Context, urls []string, perURL int, d time.Duration, newConns bool) (CapacityResult, error) {
	return capacity(ctx, urls, perURL, d, newConns, func(ctx context.Context, u string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	})
}

// CapacityMix is Capacity over keep-alive connections with each request's
// query drawn from mix by weight and appended to its URL's, as the load
// that follows draws it (loadgen.Config.QueryMix): the capacity of a
// workload of mixed costs. An empty mix is Capacity.
func CapacityMix(ctx context.Context, urls []string, perURL int, d time.Duration, mix []loadgen.Weighted) (CapacityResult, error) {
	if len(mix) == 0 {
		return Capacity(ctx, urls, perURL, d, false)
	}
	c := loadgen.NewChooser(mix)
	return capacity(ctx, urls, perURL, d, false, func(ctx context.Context, u string) (*http.Request, error) {
		return http.NewRequestWithContext(ctx, http.MethodGet, withQuery(u, mix[c.At(rand.Float64())].Value), nil)
	})
}

// withQuery appends the query q to the URL u, after u's own if it has one.
func withQuery(u, q string) string {
	switch {
	case q == "":
		return u
	case strings.Contains(u, "?"):
		return u + "&" + q
	}
	return u + "?" + q
}

// mixQuery returns a stream's tweak that sets the load's QueryMix to mix;
// nil for an empty mix.
func mixQuery(mix []loadgen.Weighted) func(*loadgen.Config) {
	if len(mix) == 0 {
		return nil
	}
	return func(c *loadgen.Config) { c.QueryMix = mix }
}

// CapacityPost is Capacity with every request a POST of body, of type
// contentType: for workers such as Hypernova that render a posted job.
func CapacityPost(ctx context.Context, urls []string, perURL int, d time.Duration, newConns bool, contentType string, body []byte) (CapacityResult, error) {
	return capacity(ctx, urls, perURL, d, newConns, func(ctx context.Context, u string) (*http.Request, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", contentType)
		return req, nil
	})
}

// capacity is Capacity with each request made by newRequest.
func capacity(ctx context.Context, urls []string, perURL int, d time.Duration, newConns bool, newRequest func(context.Context, string) (*http.Request, error)) (CapacityResult, error) {
	tr := &http.Transport{
		Proxy:               nil,
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		MaxIdleConnsPerHost: perURL * len(urls),
		DisableKeepAlives:   newConns,
	}
	defer tr.CloseIdleConnections()
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	send := func(ctx context.Context, u string) (int, error) {
		req, err := newRequest(ctx, u)
		if err != nil {
			return 0, err
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, err
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var (
		ok, failed atomic.Int64
		latency    atomic.Int64
		wg         sync.WaitGroup
	)
	start := time.Now()
	for _, u := range urls {
		for range perURL {
			wg.Go(func() {
				for ctx.Err() == nil {
					t0 := time.Now()
					status, err := send(ctx, u)
					switch {
					case ctx.Err() != nil:
						// Cut by the end of the measurement: not counted.
					case err == nil && status/100 == 2:
						ok.Add(1)
						latency.Add(int64(time.Since(t0)))
					default:
						failed.Add(1)
					}
				}
			})
		}
	}
	wg.Wait()
	el := time.Since(start)
	r := CapacityResult{Successes: ok.Load(), Errors: failed.Load(), Duration: el}
	if r.Successes > 0 {
		r.Rate = float64(r.Successes) / el.Seconds()
		r.MeanLatency = time.Duration(latency.Load() / r.Successes)
	}
	if err := context.Cause(ctx); err != nil && err != context.DeadlineExceeded {
		return r, err
	}
	return r, nil
}
