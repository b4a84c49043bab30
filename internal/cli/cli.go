// Package cli is the sluice command: its subcommands and their flags. The
// binary in cmd/sluice only calls Main; it lives here, importable, so that
// another main (the otel module's, which adds tracing) is the same command
// with extensions rather than a copy. What serve runs is assembled by
// internal/app; demo runs the same assembly in front of demo workers.
//
// This file is dispatch only: each subcommand lives in its own file.
package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/sluicehq/sluice/internal/supervisor"
)

// command is one subcommand. run returns the process exit code.
type command struct {
	name    string
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) int
}

func commands(ext Extensions) []command {
	serve := func(ctx context.Context, args []string, stdout, stderr io.Writer) int {
		return runServe(ctx, ext, args, stdout, stderr)
	}
	return []command{
		{"serve", "run the front server (with workers or upstreams from the config, else the embedded demo app)", serve},
		{"demo", "run sluice in front of built-in demo workers and print a load ramp, with and without admission control", runDemo},
		{"bench", "open-loop load generator and overload report (only against your own servers)", runBench},
		{"validate", "check a config file; --print-defaults prints every default", runValidate},
		{"version", "print the version", runVersion},
		{"demo-worker", "a single-threaded demo renderer on $PORT or $SLUICE_SOCKET (started by demo; usable as a worker)", runDemoWorker},
	}
}

// Extensions are what a main adds to the command: hooks that need
// dependencies sluice's own module keeps out of its go.mod.
type Extensions struct {
	// WrapFront, if set, wraps the front's whole handler (outermost: it
	// sees every request, shed or served) in serve's front and library
	// modes, across reloads (app.Options.WrapFront).
	WrapFront func(http.Handler) http.Handler
}

// Main runs the sluice command line and returns the process exit code.
// Call it first in main: a worker's guard is the binary re-executed, and
// Main runs it instead of the commands.
func Main(ext Extensions) int {
	supervisor.GuardMain()
	// Signals are the serve command's business (it drains on the first and
	// cuts on the second); here they only cancel ctx for the others.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return dispatch(ctx, ext, os.Args[1:], os.Stdout, os.Stderr)
}

func dispatch(ctx context.Context, ext Extensions, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return 2
	}
	name := args[0]
	if name == "help" || name == "-h" || name == "--help" {
		if len(args) > 1 {
			return dispatch(ctx, ext, []string{args[1], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return 0
	}
	for _, c := range commands(ext) {
		if c.name == name {
			return c.run(ctx, args[1:], stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "sluice: unknown command %q\n\n", name)
	usage(stderr)
	return 2
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: sluice <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range commands(Extensions{}) {
		fmt.Fprintf(w, "  %-12s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w, "  help         help [command] prints a command's flags")
}
