package main

import (
	"context"
	"fmt"
	"io"
)

// TODO(owner of serve): replace this placeholder.
func runServe(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice serve: not implemented yet")
	return 1
}
