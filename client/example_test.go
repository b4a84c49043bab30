package client_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/client"
)

// Put a Transport under the http.Client a service uses for its outbound
// calls. Here the downstream sheds the first request (503, Retry-After: 1);
// the Transport waits a second and tries again.
func Example() {
	var n atomic.Int32
	downstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			admission.WriteShed(w, admission.ReasonQueueFull, time.Second)
			return
		}
		io.WriteString(w, "hello\n")
	}))
	defer downstream.Close()

	tr, err := client.New(nil, client.Options{}) // defaults: 3 attempts, 10% retry budget, ...
	if err != nil {
		panic(err)
	}
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(downstream.URL)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	st := tr.Stats()
	fmt.Printf("%d %s", resp.StatusCode, body)
	fmt.Printf("attempts %d, retries %d\n", st.Attempts, st.Retries)
	// Output:
	// 200 hello
	// attempts 2, retries 1
}

// A handler's outbound calls inherit its deadline and priority: the
// downstream sluice sees how long it has and what to shed first.
func ExampleWithPriority() {
	downstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Println("Sluice-Priority:", r.Header.Get(admission.HeaderPriority))
		fmt.Println("has Sluice-Timeout:", r.Header.Get(admission.HeaderTimeout) != "")
	}))
	defer downstream.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ctx = client.WithPriority(ctx, admission.SheddablePlus) // batch work: shed it before user traffic

	req, _ := http.NewRequestWithContext(ctx, "GET", downstream.URL, nil)
	resp, err := (&http.Client{Transport: &client.Transport{}}).Do(req)
	if err != nil {
		panic(err)
	}
	resp.Body.Close()
	// Output:
	// Sluice-Priority: sheddable-plus
	// has Sluice-Timeout: true
}

type downHost struct{}

func (downHost) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connect: connection refused")
}

// A host that keeps failing is cut off for a cooldown: requests fail at
// once with ErrCircuitOpen instead of adding to its trouble.
func ExampleTransport_Stats() {
	tr, err := client.New(downHost{}, client.Options{MaxAttempts: 1, BreakerFailures: 2})
	if err != nil {
		panic(err)
	}
	for range 3 {
		req, _ := http.NewRequest("GET", "http://inventory.internal/items", nil)
		_, err := tr.RoundTrip(req)
		fmt.Println(errors.Is(err, client.ErrCircuitOpen), err)
	}
	st := tr.Stats()
	fmt.Println("attempts:", st.Attempts, "circuit-open rejections:", st.CircuitOpen,
		"breaker:", st.Hosts["inventory.internal"].Breaker)
	// Output:
	// false connect: connection refused
	// false connect: connection refused
	// true client: circuit open: host inventory.internal
	// attempts: 2 circuit-open rejections: 1 breaker: open
}
