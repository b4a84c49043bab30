//go:build unix

package reactssr

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// pageMarker is in every listing page; cardMarker once per listing card.
const (
	pageMarker = `data-testid="listing-page"`
	cardMarker = `data-testid="listing-card"`
	pageSize   = 200
)

// Deadlines of the waits on real processes: generous, because the machine
// is shared and a cold Node.js start takes a second or more.
const (
	startDeadline = 30 * time.Second
	exitDeadline  = 15 * time.Second
	pollInterval  = 20 * time.Millisecond
)

// requireNode returns the example's absolute directory, after checking
// that node is on PATH and npm ci has been run there. Without them the test
// is skipped, or fails when the environment variable CI is set: CI must
// run it.
func requireNode(tb testing.TB) string {
	tb.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		tb.Fatal(err)
	}
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(dir, "node_modules", "react-dom", "package.json")); err != nil {
		missing = "node_modules is missing: run npm ci in " + dir
	}
	if missing == "" {
		return dir
	}
	testutil.Missing(tb, missing)
	return ""
}

// pollUntil is testutil.PollUntil at this test's interval.
func pollUntil(tb testing.TB, d time.Duration, what string, cond func() bool) {
	tb.Helper()
	testutil.PollUntil(tb, d, pollInterval, what, cond)
}

// held is a request the worker is holding: it has reached the worker
// (pid), which renders it once release is called.
type held struct {
	name    string
	pid     string
	release func()
}

// holdHook is the test's end of worker.js's REACT_SSR_HOLD_ADDR: a worker
// given ?hold=NAME connects, says "NAME PID" and waits until the connection
// is closed.
type holdHook struct {
	addr string
	held chan held
}

// newHoldHook listens on 127.0.0.1; cleanup closes the listener and
// releases every request still held.
func newHoldHook(tb testing.TB) *holdHook {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	h := &holdHook{addr: ln.Addr().String(), held: make(chan held, 16)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, conn)
			mu.Unlock()
			wg.Go(func() {
				_ = conn.SetReadDeadline(time.Now().Add(startDeadline))
				line, err := bufio.NewReader(conn).ReadString('\n')
				name, pid, ok := strings.Cut(strings.TrimSpace(line), " ")
				if err != nil || !ok {
					conn.Close()
					return
				}
				select {
				case h.held <- held{name: name, pid: pid, release: func() { conn.Close() }}:
				default: // nobody expects it: let it go
					conn.Close()
				}
			})
		}
	})
	tb.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return h
}

// next returns the next held request, failing the test after d.
func (h *holdHook) next(tb testing.TB, d time.Duration) held {
	tb.Helper()
	select {
	case r := <-h.held:
		return r
	case <-time.After(d):
		tb.Fatalf("no request reached a worker's hold within %v", d)
		return held{}
	}
}

// reply is an HTTP response read whole, or the error that stopped it.
type reply struct {
	status int
	header http.Header
	body   string
	err    error
}

func (r reply) String() string {
	if r.err != nil {
		return r.err.Error()
	}
	return fmt.Sprintf("%d %.80q", r.status, r.body)
}

// get sends GET url with client and reads the whole answer within timeout.
func get(client *http.Client, url string, timeout time.Duration) reply {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return reply{err: err}
	}
	return do(client, req)
}

func do(client *http.Client, req *http.Request) reply {
	resp, err := client.Do(req)
	if err != nil {
		return reply{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: string(body), err: err}
}

// checkPage reports what is wrong with r as a listing page, or "".
func checkPage(r reply) string {
	switch {
	case r.err != nil:
		return r.err.Error()
	case r.status != http.StatusOK:
		return fmt.Sprintf("status %d (%s), want 200", r.status, strings.TrimSpace(r.body))
	case !strings.Contains(r.body, pageMarker):
		return fmt.Sprintf("body (%d bytes) lacks %s", len(r.body), pageMarker)
	case r.header.Get("X-Worker-Pid") == "":
		return "no X-Worker-Pid header"
	}
	return ""
}
