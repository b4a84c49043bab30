//go:build unix

package reactssr

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Bounds of a load run: it stops when told, or at the latest after
// loadMaxDuration or loadMaxRequests per client, whichever comes first.
const (
	loadMaxDuration = 60 * time.Second
	loadMaxRequests = 5000
	loadTimeout     = 5 * time.Second // each request's
)

// load is a few closed-loop clients asking for listing pages until stopped.
// Its methods are safe for concurrent use.
type load struct {
	stop    chan struct{}
	wg      sync.WaitGroup
	changed chan struct{} // a buffered poke after each answer
	onPID   func(pid string)

	mu       sync.Mutex
	pids     []string // X-Worker-Pid of each good answer, in order
	failures []string // what was wrong with each bad one
}

// startLoad starts clients goroutines GETting base+"/?page=N"; onPID is
// told the worker of every good answer. Cleanup stops them.
func startLoad(tb testing.TB, client *http.Client, base string, clients int, onPID func(string)) *load {
	l := &load{stop: make(chan struct{}), changed: make(chan struct{}, 1), onPID: onPID}
	deadline := time.Now().Add(loadMaxDuration)
	for c := range clients {
		l.wg.Go(func() {
			for i := range loadMaxRequests {
				select {
				case <-l.stop:
					return
				default:
				}
				if time.Now().After(deadline) {
					return
				}
				url := fmt.Sprintf("%s/?page=%d", base, (c*loadMaxRequests+i)%50+1)
				l.record(get(client, url, loadTimeout))
			}
		})
	}
	tb.Cleanup(func() { l.finish() })
	return l
}

func (l *load) record(r reply) {
	msg := checkPage(r)
	l.mu.Lock()
	if msg == "" {
		l.pids = append(l.pids, r.header.Get("X-Worker-Pid"))
	} else {
		l.failures = append(l.failures, msg)
	}
	l.mu.Unlock()
	if msg == "" && l.onPID != nil {
		l.onPID(r.header.Get("X-Worker-Pid"))
	}
	select {
	case l.changed <- struct{}{}:
	default:
	}
}

// answered returns the number of good answers so far: a mark for await.
func (l *load) answered() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pids)
}

// await returns once cond, called with the workers of the good answers
// so far (not to be kept), holds; it fails the test if cond is still false
// after d or the clients have stopped.
func (l *load) await(tb testing.TB, d time.Duration, what string, cond func(pids []string) bool) {
	tb.Helper()
	timeout := time.After(d)
	for {
		l.mu.Lock()
		ok, n, failed := cond(l.pids), len(l.pids), len(l.failures)
		l.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-l.changed:
		case <-timeout:
			tb.Fatalf("%s: not within %v (%d good answers, %d failures: %s)", what, d, n, failed, l.someFailures())
		}
	}
}

// finish stops the clients, waits for them and returns the number of good
// answers and the failures. It may be called more than once.
func (l *load) finish() (ok int, failures []string) {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.pids), append([]string(nil), l.failures...)
}

// someFailures summarises the failures so far, for messages.
func (l *load) someFailures() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return summary(l.failures)
}

// distinct returns the distinct elements of pids, in order of appearance.
func distinct(pids []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range pids {
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// summary counts equal failures: "13 × status 502 (...), 1 × EOF".
func summary(failures []string) string {
	var order []string
	count := map[string]int{}
	for _, f := range failures {
		if count[f] == 0 {
			order = append(order, f)
		}
		count[f]++
	}
	parts := make([]string, len(order))
	for i, f := range order {
		parts[i] = fmt.Sprintf("%d × %s", count[f], f)
	}
	return strings.Join(parts, ", ")
}
