package main

import (
	"context"
	"fmt"
	"io"
)

// TODO(owner of validate): replace this placeholder.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice validate: not implemented yet")
	return 1
}
