package main

import (
	"bytes"
	"context"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/eval"
)

func TestRunExitCodes(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"help", []string{"-h"}, 0},
		{"unknown flag", []string{"-nope"}, 2},
		{"bad keep-alive mode", []string{"-keepalive", "sometimes", "-out", t.TempDir()}, 2},
		{"unknown scenario", []string{"-scenarios", "goodput,nope", "-out", t.TempDir()}, 2},
		{"unknown Node.js setup family", []string{"-scenarios", "node-react", "-node-setups", "sluice,envoy", "-out", t.TempDir()}, 2},
		{"rewrite with nothing to rewrite", []string{"-rewrite", "-out", t.TempDir()}, 0},
		{"no render a request", []string{"-scenarios", "node-react", "-node-react-renders", "0", "-out", t.TempDir()}, 2},
		{"too many renders a request", []string{"-scenarios", "node-react", "-node-react-renders", "51", "-out", t.TempDir()}, 2},
		{"no restart round", []string{"-scenarios", "hypernova", "-restart-rounds", "0", "-out", t.TempDir()}, 2},
		{"a query mix without a weight", []string{"-scenarios", "node-react", "-node-react-mix", "cards=10:x", "-out", t.TempDir()}, 2},
		{"a query mix of weight 0", []string{"-scenarios", "node-react", "-node-react-mix", "cards=10:0", "-out", t.TempDir()}, 2},
		{"rr-proxy without upstreams", []string{"rr-proxy", "-listen", "127.0.0.1:0"}, 2},
		{"lib-server without a calibration", []string{"lib-server", "-listen", "127.0.0.1:0"}, 2},
		{"lib-server on a public address", []string{"lib-server", "-listen", "0.0.0.0:0", "-units", "1"}, 1},
		{"lib-server with an unknown algorithm", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-admission", "-algorithm", "vegas"}, 2},
		{"lib-server with an algorithm but no admission", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-algorithm", "gradient"}, 2},
		{"lib-server with an initial limit but no admission", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-initial-limit", "2"}, 2},
		{"lib-server with a negative initial limit", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-admission", "-initial-limit", "-1"}, 2},
		{"shed-server with an unknown flag", []string{"shed-server", "-upstreams", "x"}, 2},
		{"shed-server on a public address", []string{"shed-server", "-listen", "0.0.0.0:0"}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if got := run(context.Background(), tt.args, &stderr); got != tt.want {
				t.Errorf("got exit code %d, want %d; stderr:\n%s", got, tt.want, stderr.String())
			}
		})
	}
}

// shed-server serves the floor until its context ends, then exits 0.
func TestShedServer(t *testing.T) {
	port, err := eval.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() { done <- run(ctx, []string{"shed-server", "-listen", addr}, &stderr) }()
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if err := eval.WaitHTTP(wctx, "http://"+addr+eval.FloorReadyPath); err != nil {
		cancel()
		t.Fatalf("shed-server never became ready: %v; stderr:\n%s", err, stderr.String())
	}
	resp, err := http.Get("http://" + addr + "/?spin=10")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /: got %d, want 503", resp.StatusCode)
	}
	cancel()
	if got := <-done; got != 0 {
		t.Errorf("got exit code %d after the context ended, want 0; stderr:\n%s", got, stderr.String())
	}
}
