package main

import (
	"context"
	"fmt"
	"io"
)

// TODO(owner of bench): replace this placeholder.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice bench: not implemented yet")
	return 1
}
