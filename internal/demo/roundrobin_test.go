package demo

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestRoundRobinTakesTurns(t *testing.T) {
	var addrs []string
	for _, name := range []string{"a", "b", "c"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, name) }))
		t.Cleanup(srv.Close)
		addrs = append(addrs, strings.TrimPrefix(srv.URL, "http://"))
	}
	rr, err := NewRoundRobin(addrs)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(rr)
	t.Cleanup(front.Close)
	var got []string
	for range 6 {
		status, body, err := fetch(context.Background(), front.URL)
		if err != nil || status != http.StatusOK {
			t.Fatalf("got %d, %v, want 200", status, err)
		}
		got = append(got, body)
	}
	if want := "abcabc"; strings.Join(got, "") != want {
		t.Errorf("got upstreams %v in turn, want %s", got, want)
	}
}

func TestRoundRobinCancelsTheUpstreamWhenTheClientLeaves(t *testing.T) {
	arrived, cancelled := make(chan struct{}), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
		close(cancelled)
	}))
	t.Cleanup(up.Close)
	rr, err := NewRoundRobin([]string{strings.TrimPrefix(up.URL, "http://")})
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(rr)
	t.Cleanup(front.Close)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := fetch(ctx, front.URL)
		done <- err
	}()
	<-arrived
	cancel()
	<-done
	select {
	case <-cancelled:
	case <-time.After(5 * time.Second):
		t.Fatal("the upstream request was not cancelled when the client left")
	}
}

func TestRoundRobinAnswers502WhenTheUpstreamIsDown(t *testing.T) {
	// An address nothing listens on any more.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := ln.Addr().String()
	ln.Close()
	rr, err := NewRoundRobin([]string{down})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	rr.ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
	if rec.Code != http.StatusBadGateway {
		t.Errorf("got %d, want 502", rec.Code)
	}
	for _, bad := range [][]string{nil, {""}, {"127.0.0.1"}, {"127.0.0.1:1", "nonsense"}} {
		if _, err := NewRoundRobin(bad); err == nil {
			t.Errorf("upstreams %q: got no error, want one", bad)
		}
	}
}

// fetch gets url on a connection of its own and returns the status and
// the body.
func fetch(ctx context.Context, url string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}
