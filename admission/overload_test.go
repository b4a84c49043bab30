package admission_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicehq/sluice/admission"
	"github.com/sluicehq/sluice/internal/demo"
	"github.com/sluicehq/sluice/internal/loadgen"
)

// childEnv makes the test binary a server: TestOverloadChild serves a
// CPU-bound handler, plain or behind admission.New(admission.Options{}),
// until its stdin closes.
const childEnv = "SLUICE_OVERLOAD_CHILD"

// handlerCPU is the CPU-bound handler's work per request.
const handlerCPU = 20 * time.Millisecond

// With the defaults, a CPU-bound Go service under 4x its capacity keeps
// most of it; plain net/http collapses (its handlers time-slice the two
// CPUs, the goroutines that read and answer requests starve). A bounded
// run of real processes (GOMAXPROCS 2, keep-alive on, 1 s client
// timeout); it asserts goodput ratios, never absolute times.
func TestOverloadDefaultsKeepGoodput(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and overloads them for about 15 s")
	}
	work := demo.Calibrate(100 * time.Millisecond)
	addr, stop := startChild(t, "plain", work)
	capacity := closedLoopRate(t, addr, 4, 2*time.Second)
	stop()
	t.Logf("capacity (closed loop, 4 clients): %.0f/s", capacity)
	rate := 4 * capacity
	goodput := map[string]float64{}
	for _, mode := range []string{"plain", "defaults"} {
		addr, stop := startChild(t, mode, work)
		rep, err := loadgen.Run(t.Context(), loadgen.Config{
			URL:     "http://" + addr + "/",
			Phases:  []loadgen.Phase{{Rate: rate, Duration: 3 * time.Second}},
			Timeout: time.Second,
			Seed:    1,
		})
		stop() // before the next child: a collapsed server burns CPU for long after
		if err != nil {
			t.Fatal(err)
		}
		goodput[mode] = rep.Total.Goodput
		t.Logf("%s at 4x (%.0f/s): goodput %.0f/s (%.0f%% of capacity), errors %v",
			mode, rate, rep.Total.Goodput, 100*rep.Total.Goodput/capacity, rep.Total.Errors)
		timeouts := rep.Total.Errors["timeout"]
		switch {
		case mode == "defaults" && timeouts*10 > rep.Total.Requests:
			t.Errorf("defaults: %d of %d requests timed out, want failures to be instant sheds", timeouts, rep.Total.Requests)
		case mode == "plain" && timeouts*5 < rep.Total.Requests:
			// The collapse the defaults avoid must be there to avoid.
			t.Errorf("plain: only %d of %d requests timed out at 4x: the load did not overload it", timeouts, rep.Total.Requests)
		}
	}
	// The thresholds leave room for a shared machine: the same run measured
	// 83-91% for the defaults and 14-54% for plain on two loaded cores, and
	// 38-55% for the defaults (plain 3-8%) beside the other packages' tests
	// in CI, whose load the capacity measured a few seconds before did not
	// see. What holds in every run is the distance between the two: without
	// the defaults' limit the service collapses as plain does.
	d, p := goodput["defaults"]/capacity, goodput["plain"]/capacity
	if d < 0.25 {
		t.Errorf("defaults kept %.0f%% of capacity at 4x, want >= 25%%", 100*d)
	}
	if d < p+0.2 {
		t.Errorf("defaults kept %.0f%% of capacity, plain %.0f%%: want the defaults 20 points above plain at least", 100*d, 100*p)
	}
}

// startChild starts the test binary as a server in mode ("plain" or
// "defaults") with GOMAXPROCS 2 and returns its address and a func that
// stops it (killing it if it has not exited within 3 s); the test's end
// stops it too.
func startChild(t *testing.T, mode string, work demo.Work) (string, func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOverloadChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2", childEnv+"="+mode,
		"SLUICE_OVERLOAD_UNITS="+strconv.FormatFloat(work.UnitsPerMilli(), 'f', -1, 64))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop := sync.OnceFunc(func() {
		stdin.Close() // the child shuts down on EOF
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		timer := time.NewTimer(3 * time.Second)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			cmd.Process.Kill()
			<-done
		}
	})
	t.Cleanup(stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("child %s: got %q, %v; want its address", mode, line, err)
	}
	go io.Copy(io.Discard, stdout)
	return addr, stop
}

// closedLoopRate runs n clients back to back against addr for d and
// returns the completions per second.
func closedLoopRate(t *testing.T, addr string, n int, d time.Duration) float64 {
	t.Helper()
	var done atomic.Int64
	ctx, cancel := context.WithTimeout(t.Context(), d)
	defer cancel()
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			cl := &http.Client{Transport: &http.Transport{}}
			defer cl.CloseIdleConnections()
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+addr+"/", nil)
				resp, err := cl.Do(req)
				if err != nil {
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode == 200 {
					done.Add(1)
				}
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / d.Seconds()
}

// TestOverloadChild is the child's body; without childEnv it does nothing.
func TestOverloadChild(t *testing.T) {
	mode := os.Getenv(childEnv)
	if mode == "" {
		t.Skip("run by TestOverloadDefaultsKeepGoodput")
	}
	units, err := strconv.ParseFloat(os.Getenv("SLUICE_OVERLOAD_UNITS"), 64)
	if err != nil {
		t.Fatal(err)
	}
	work := demo.NewWork(units)
	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "%x\n", work.Do(handlerCPU))
	})
	if mode == "defaults" {
		c, err := admission.New(admission.Options{})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		h = c.Wrap(h)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	fmt.Printf("ADDR %s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin) // until the parent closes it
	// A collapsed plain server has work queued for many seconds: give it
	// a second, then the process exits under it.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}
