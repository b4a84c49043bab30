package proxy_test

// Integration tests over real loopback sockets: httptest workers on
// 127.0.0.1, the Proxy behind an httptest front. Every wait is bounded.

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/proxy"
	"github.com/sluicehq/sluice/internal/supervisor"
	"github.com/sluicehq/sluice/limit"
)

const liveWait = 10 * time.Second // bound on any single wait

type live struct {
	c       *admission.Controller
	p       *proxy.Proxy
	front   *httptest.Server
	client  *http.Client
	workers []*render
}

// newLive starts n workers of Concurrency 1 and a front for them. front,
// when set, adjusts the front server before it starts.
func newLive(t *testing.T, n int, o proxy.Options, co admission.Options, front func(*http.Server)) *live {
	t.Helper()
	co.Limit = limit.NewFixed(admission.MaxLimit)
	co.SampleWindow = -1
	c, err := admission.New(co)
	if err != nil {
		t.Fatal(err)
	}
	o.Controller = c
	o.Lookahead = strictUnlessAsked(o.Lookahead)
	p, err := proxy.New(o)
	if err != nil {
		t.Fatal(err)
	}
	l := &live{c: c, p: p}
	l.front = httptest.NewUnstartedServer(p)
	if front != nil {
		front(l.front.Config)
	}
	l.front.Start()
	l.client = l.front.Client()
	l.client.Timeout = liveWait
	for i := range n {
		w := newRender(fmt.Sprintf("w%d", i+1))
		srv := httptest.NewServer(w)
		l.workers = append(l.workers, w)
		t.Cleanup(srv.Close)
		p.Add(supervisor.Endpoint{ID: i + 1, Network: "tcp", Addr: srv.Listener.Addr().String(), Concurrency: 1})
	}
	t.Cleanup(func() {
		l.client.CloseIdleConnections()
		l.front.Close()
		p.CloseIdleConnections()
		c.Close()
	})
	t.Cleanup(func() { // first: let every blocked render finish
		for _, w := range l.workers {
			w.openAll()
		}
	})
	return l
}

func (l *live) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := l.client.Get(l.front.URL + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return resp.StatusCode, string(b)
}

// waitStarted waits until w has started a request for path.
func waitStarted(t *testing.T, w *render, path string) {
	t.Helper()
	timeout := time.After(liveWait)
	for {
		select {
		case p := <-w.started:
			if p == path {
				return
			}
		case <-timeout:
			t.Fatalf("%s never started %s", w.name, path)
		}
	}
}

// Many clients, fast and slow requests mixed, two workers of Concurrency
// 1: no worker ever holds two requests.
func TestLiveNoWorkerEverHasTwoInFlight(t *testing.T) {
	l := newLive(t, 2, proxy.Options{}, admission.Options{QueueSize: 1000, QueueTimeout: liveWait}, nil)
	const clients, each = 16, 8
	var wg sync.WaitGroup
	errs := make(chan error, clients*each)
	for i := range clients {
		wg.Go(func() {
			for j := range each {
				path := "/fast"
				if (i+j)%3 == 0 {
					path = "/sleep?d=2ms"
				}
				resp, err := l.client.Get(l.front.URL + path)
				if err != nil {
					errs <- err
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("GET %s: got %d, want 200", path, resp.StatusCode)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var served int64
	for _, w := range l.workers {
		if got := w.peak.Load(); got != 1 {
			t.Errorf("%s held %d requests at once, want 1", w.name, got)
		}
		served += w.served.Load()
	}
	if served != clients*each {
		t.Errorf("workers served %d, want %d", served, clients*each)
	}
}

// A slow render occupies one worker; fast requests go to the idle one
// rather than queue behind it.
func TestLiveFastNotStuckBehindSlow(t *testing.T) {
	l := newLive(t, 2, proxy.Options{}, admission.Options{}, nil)
	slow := make(chan int, 1)
	go func() {
		resp, err := l.client.Get(l.front.URL + "/block/slow")
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	waitStarted(t, l.workers[0], "/block/slow")
	for i := range 5 {
		path := fmt.Sprintf("/fast%d", i)
		if code, body := l.get(t, path); code != 200 || body != "w2 "+path {
			t.Errorf("got %d %q while w1 renders, want 200 from w2", code, body)
		}
	}
	l.workers[0].open("slow")
	if code := <-slow; code != 200 {
		t.Errorf("got %d for the slow request, want 200", code)
	}
}

// rawRequest sends head and part of a body on a new connection and leaves
// the connection open.
func rawRequest(t *testing.T, addr, head string) net.Conn {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, liveWait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(liveWait))
	if _, err := io.WriteString(conn, head); err != nil {
		t.Fatal(err)
	}
	return conn
}

// A client that sends half its body and stalls does not hold the only
// worker: another client is served meanwhile.
func TestLiveSlowBodyHoldsNoSlot(t *testing.T) {
	l := newLive(t, 1, proxy.Options{}, admission.Options{}, nil)
	conn := rawRequest(t, l.front.Listener.Addr().String(),
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello")
	if code, body := l.get(t, "/b"); code != 200 || body != "w1 /b" {
		t.Fatalf("got %d %q while a body was pending, want 200", code, body)
	}
	io.WriteString(conn, "world")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "helloworld" {
		t.Errorf("got %d %q for the slow client, want 200 helloworld", resp.StatusCode, b)
	}
}

// The server's read deadline cutting a body read is answered 408.
func TestLiveBodyReadTimeout(t *testing.T) {
	l := newLive(t, 1, proxy.Options{}, admission.Options{}, func(s *http.Server) {
		s.ReadTimeout = 100 * time.Millisecond
	})
	conn := rawRequest(t, l.front.Listener.Addr().String(),
		"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nhello")
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("got %d, want 408", resp.StatusCode)
	}
	if got := l.p.Stats().BodyTimeout; got != 1 {
		t.Errorf("got %d body timeouts, want 1", got)
	}
	if got := l.workers[0].seen(); len(got) != 0 {
		t.Errorf("worker saw %q, want nothing", got)
	}
}

// A worker whose port refuses connections: requests go to the other.
func TestLiveUnreachableWorker(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	l := newLive(t, 1, proxy.Options{}, admission.Options{}, nil)
	l.p.Add(supervisor.Endpoint{ID: 99, Network: "tcp", Addr: dead, Concurrency: 1})
	for range 3 {
		if code, body := l.get(t, "/x"); code != 200 || body != "w1 /x" {
			t.Errorf("got %d %q, want 200 from the reachable worker", code, body)
		}
	}
	if got := l.p.Stats().DialFailures; got == 0 {
		t.Error("got no dial failures, want the dead port tried")
	}
}

// A worker that dies mid-request: GET and POST alike get 502, and the
// other worker never sees the request that killed the first. The first
// request to the dying worker reuses a kept-alive connection, so the
// Transport's own replay on a fresh connection to the same worker is
// exercised too: that replay stays on the same worker.
func TestLiveWorkerDies(t *testing.T) {
	l := newLive(t, 2, proxy.Options{}, admission.Options{}, nil)
	for range 2 { // a kept-alive connection to each worker
		if code, _ := l.get(t, "/warm"); code != 200 {
			t.Fatalf("warm-up: got %d, want 200", code)
		}
	}
	l.workers[0].fail = "/die"
	if code, body := l.get(t, "/x"); code != http.StatusBadGateway {
		t.Errorf("GET: got %d %q, want 502", code, body)
	}
	if code, _ := l.get(t, "/y"); code != 200 { // to w2: the POST goes to w1 next
		t.Errorf("GET /y: got %d, want 200", code)
	}
	resp, err := l.client.Post(l.front.URL+"/p", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway {
		t.Errorf("POST: got %d, want 502", resp.StatusCode)
	}
	if got := l.workers[1].seen(); slices.Contains(got, "/x") || slices.Contains(got, "/p") {
		t.Errorf("the other worker saw %q, want none of the requests that killed the first", got)
	}
}

// Workers may listen on unix sockets.
func TestLiveUnixSocketWorker(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "w.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Skipf("no unix sockets here: %v", err)
	}
	w := newRender("unix")
	srv := &httptest.Server{Listener: ln, Config: &http.Server{Handler: w}}
	srv.Start()
	t.Cleanup(srv.Close)
	l := newLive(t, 0, proxy.Options{}, admission.Options{}, nil)
	l.p.Add(supervisor.Endpoint{ID: 7, Network: "unix", Addr: sock, Concurrency: 1})
	for range 2 { // the second reuses the kept-alive connection
		if code, body := l.get(t, "/u"); code != 200 || body != "unix /u" {
			t.Errorf("got %d %q, want 200 %q", code, body, "unix /u")
		}
	}
}

// A worker that has died but is not yet removed refuses every connection
// at once, so its slot always looks free. It must not draw the requests
// meanwhile: it is passed over after its first refusal, and a request that
// found it dead waits for the busy live worker instead of failing.
func TestLiveDeadWorkerDoesNotDrawRequests(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	l := newLive(t, 1, proxy.Options{}, admission.Options{QueueSize: 100}, nil)
	l.p.Add(supervisor.Endpoint{ID: 99, Network: "tcp", Addr: dead, Concurrency: 1})
	var wg sync.WaitGroup
	codes := make(chan int, 12)
	for range 4 {
		wg.Go(func() {
			for range 3 {
				code, _ := l.get(t, "/x")
				codes <- code
			}
		})
	}
	wg.Wait()
	close(codes)
	for code := range codes {
		if code != http.StatusOK {
			t.Errorf("got %d, want every request served by the live worker", code)
		}
	}
	if got := l.p.Stats().DialFailures; got > 2 {
		t.Errorf("got %d dial failures, want the dead worker passed over after its first refusals", got)
	}
}
