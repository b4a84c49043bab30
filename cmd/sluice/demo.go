package main

import (
	"context"
	"fmt"
	"io"
)

// TODO(owner of demo): replace this placeholder.
func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice demo: not implemented yet")
	return 1
}
