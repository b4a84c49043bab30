package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/sluicehq/sluice/internal/demo"
)

// TODO(owner of demo): replace this placeholder.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice demo: not implemented yet")
	return 1
}

// runDemoWorker is the hidden `demo-worker` command: sluice re-executed as
// a single-threaded demo renderer (see internal/demo). `sluice demo` starts
// it; it is also handy as a worker in your own configs and benchmarks.
func runDemoWorker(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		fmt.Fprintln(stderr, "usage: sluice demo-worker (configured by PORT or SLUICE_SOCKET, and SLUICE_DEMO_UNITS_PER_MS)")
		if args[0] == "-h" || args[0] == "--help" {
			return 0
		}
		return 2
	}
	if err := demo.RunWorker(ctx, os.Getenv); err != nil {
		fmt.Fprintln(stderr, "sluice demo-worker:", err)
		return 1
	}
	return 0
}
