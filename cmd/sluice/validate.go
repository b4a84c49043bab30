package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/internal/config"
)

// runValidate checks a config file: "ok: FILE" and exit 0, or every problem
// (one per line, file:line: key: message) and exit 1. Usage errors exit 2.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("c", "", "config `file` (default ./"+config.DefaultFile+" when present, else the built-in defaults)")
	printDefaults := fs.Bool("print-defaults", false, "print the built-in configuration as commented YAML and exit")
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: sluice validate [-c FILE] [--print-defaults]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Checks a config file and reports every problem with its line.")
		fmt.Fprintln(w)
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return 0
		}
		fmt.Fprintf(stderr, "sluice validate: %v\n\n", err)
		usage(stderr)
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "sluice validate: unexpected argument %q (name the file with -c)\n\n", fs.Arg(0))
		usage(stderr)
		return 2
	}
	if *printDefaults {
		if *path != "" {
			fmt.Fprintln(stderr, "sluice validate: --print-defaults prints the built-in defaults; it takes no -c")
			return 2
		}
		if _, err := stdout.Write(config.DefaultYAML()); err != nil {
			fmt.Fprintf(stderr, "sluice validate: %v\n", err)
			return 1
		}
		return 0
	}

	_, source, err := config.Resolve(*path)
	if err != nil {
		if list := config.List(err); list != nil {
			for _, e := range list {
				fmt.Fprintln(stderr, e)
			}
		} else {
			fmt.Fprintf(stderr, "sluice validate: %v\n", err)
		}
		return 1
	}
	if source == "" {
		source = "built-in defaults"
	}
	fmt.Fprintf(stdout, "ok: %s\n", source)
	return 0
}
