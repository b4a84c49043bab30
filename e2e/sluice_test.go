package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/testutil"
)

// bound caps every wait on sluice and the browser: generous for two loaded
// cores, short enough that a hang fails the test instead of stalling CI.
const bound = 30 * time.Second

// sluiceBin is the sluice binary TestMain built from the parent module.
var sluiceBin string

func TestMain(m *testing.M) {
	// sluice's own module, not this one.
	os.Exit(testutil.MainWithSluice(m, "..", &sluiceBin))
}

// sluice is a running `sluice serve`.
type sluice struct {
	addr, admin string
}

// startSluice runs `sluice serve` with config (a format string given the
// listen address, the admin address and the binary, for its demo workers)
// and waits until it is ready. It is drained with SIGTERM when the test
// ends, and its process group killed if that takes longer than bound.
func startSluice(t *testing.T, config string) *sluice {
	t.Helper()
	s := &sluice{addr: testutil.FreeAddr(t), admin: testutil.FreeAddr(t)}
	path := testutil.WriteConfig(t, fmt.Sprintf(config, s.addr, s.admin, sluiceBin))
	p := testutil.StartProcess(t, exec.Command(sluiceBin, "serve", "-c", path), bound)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	if err := testutil.WaitOK(ctx, "http://"+s.addr+"/__sluice/ready", p.Done()); err != nil {
		t.Fatal(err)
	}
	return s
}

// load sends GETs to url from clients goroutines until ctx is done, and
// returns a func that stops them and waits. Every request is bounded by a
// client timeout; responses are read and dropped.
func load(ctx context.Context, url string, clients int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	c := &http.Client{Timeout: 10 * time.Second}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
				resp, err := c.Do(req)
				if err != nil {
					continue
				}
				var buf [512]byte
				for {
					if _, err := resp.Body.Read(buf[:]); err != nil {
						break
					}
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					// Paced, not a tight loop of cheap 503s: the
					// two cores are shared with sluice and Chromium.
					select {
					case <-ctx.Done():
					case <-time.After(20 * time.Millisecond):
					}
				}
			}
		})
	}
	return func() { cancel(); wg.Wait() }
}
