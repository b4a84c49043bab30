package attack

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// Slowloris: a thousand connections that send their headers a byte at a
// time hold nothing but a connection each; requests from everyone else are
// served as before, and sluice's memory stays small.
func TestSlowloris(t *testing.T) {
	requireLinux(t)
	const (
		attackers = 1000
		legit     = 400 // requests, from 4 clients, new connection each
		drip      = 500 * time.Millisecond
		length    = 4 * time.Second
	)
	s := Start(t, `server: {listen: {{listen}}, drainDelay: 0s}
admin: {listen: {{admin}}}
`+DemoWorkers(2))
	before := s.Memory(t)

	stop := make(chan struct{})
	var attack sync.WaitGroup
	opened := make(chan struct{}, attackers)
	for range attackers {
		attack.Go(func() {
			c, err := net.DialTimeout("tcp", s.Addr, bound)
			if err != nil {
				return
			}
			defer c.Close()
			c.SetWriteDeadline(time.Now().Add(bound))
			if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: sluice\r\nX-Slow: "); err != nil {
				return
			}
			opened <- struct{}{}
			t := time.NewTicker(drip)
			defer t.Stop()
			for {
				select {
				case <-stop:
					return
				case <-t.C:
					if _, err := io.WriteString(c, "a"); err != nil {
						return
					}
				}
			}
		})
	}
	for range attackers {
		select {
		case <-opened:
		case <-time.After(bound):
			t.Fatal("the attack's connections did not open in time")
		}
	}

	var mu sync.Mutex
	ok, failed := 0, map[string]int{}
	var clients sync.WaitGroup
	deadline := time.Now().Add(length)
	for range 4 {
		clients.Go(func() {
			for i := 0; i < legit/4 && time.Now().Before(deadline.Add(bound)); i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				code, body := testutil.Get(ctx, "http://"+s.Addr+"/?cpu=1")
				cancel()
				mu.Lock()
				if code == http.StatusOK {
					ok++
				} else {
					failed[body]++
				}
				mu.Unlock()
			}
		})
	}
	clients.Wait()
	during := s.Memory(t)
	close(stop)
	attack.Wait()

	if ok*1000 < legit*999 {
		t.Errorf("legitimate requests under slowloris: %d of %d served (failures %v), want at least 99.9%%", ok, legit, failed)
	}
	if grown := during.RSS - before.RSS; grown > 100<<20 {
		t.Errorf("sluice's memory grew by %d MiB holding %d slow connections, want at most 100 MiB", grown>>20, attackers)
	}
	t.Logf("%d/%d served; RSS %d MiB before, %d MiB with %d slow connections", ok, legit, before.RSS>>20, during.RSS>>20, attackers)
	s.Stop(t)
}
