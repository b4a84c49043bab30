package eval

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

// newClient returns a client for the harness's own calls (stats, readiness,
// capacity): no proxy, no keep-alive pool shared with the load, each call
// bounded by timeout.
func newClient(timeout time.Duration) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:             nil,
			DisableKeepAlives: true,
			DialContext:       (&net.Dialer{Timeout: timeout}).DialContext,
		},
	}
}

// get fetches url, copies the body to w and returns the status.
func get(ctx context.Context, c *http.Client, url string, w io.Writer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	return do(c, req, w)
}

// post sends body, of type contentType, to url, copies the answer's body
// to w and returns the status.
func post(ctx context.Context, c *http.Client, url, contentType string, body []byte, w io.Writer) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", contentType)
	return do(c, req, w)
}

func do(c *http.Client, req *http.Request, w io.Writer) (int, error) {
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return resp.StatusCode, err
	}
	return resp.StatusCode, nil
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// Another process may take it before the caller binds it; the processes
// that bind it report the clash and the run stops.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("eval: finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// freeAddrs returns n loopback addresses ("127.0.0.1:port") on ports
// FreePort found, for a front's listeners.
func freeAddrs(n int) ([]string, error) {
	addrs := make([]string, n)
	for i := range addrs {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port)
	}
	return addrs, nil
}
