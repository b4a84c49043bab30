package main

import (
	"bytes"
	"context"
	"testing"
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
		{"rr-proxy without upstreams", []string{"rr-proxy", "-listen", "127.0.0.1:0"}, 2},
		{"lib-server without a calibration", []string{"lib-server", "-listen", "127.0.0.1:0"}, 2},
		{"lib-server on a public address", []string{"lib-server", "-listen", "0.0.0.0:0", "-units", "1"}, 1},
		{"lib-server with an unknown algorithm", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-admission", "-algorithm", "vegas"}, 2},
		{"lib-server with an algorithm but no admission", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-algorithm", "gradient"}, 2},
		{"lib-server with an initial limit but no admission", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-initial-limit", "2"}, 2},
		{"lib-server with a negative initial limit", []string{"lib-server", "-listen", "127.0.0.1:0", "-units", "1", "-admission", "-initial-limit", "-1"}, 2},
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
