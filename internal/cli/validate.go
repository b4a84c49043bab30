package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sluicehq/sluice/internal/app"
	"github.com/sluicehq/sluice/internal/config"
)

// runValidate checks a config file: "ok: FILE" and exit 0, or every problem
// (one per line, file:line: key: message) and exit 1. Warnings (keys that
// have no effect, values that disable a safety) go to stderr and leave the
// exit code 0 unless --strict.
// A command after -- is checked as sluice serve would take it, and the
// workers' program must be one that can be started. Usage errors exit 2.
func runValidate(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	path := fs.String("c", "", "config `file` (default ./"+config.DefaultFile+" when present, else the built-in defaults)")
	var printDefaults defaultsFlag
	fs.Var(&printDefaults, "print-defaults", "print the built-in configuration as commented YAML and exit; =front leaves out the keys that act only without workers or upstreams")
	strict := fs.Bool("strict", false, "treat warnings (keys that have no effect, values that disable a safety) as errors: exit 1")
	var flags config.Flags
	flags.Define(fs)
	usage := func(w io.Writer) {
		fmt.Fprintln(w, "usage: sluice validate [-c FILE] [--strict] [--print-defaults[=front]] [serve's flags] [-- worker command...]")
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Checks a config file and reports every problem with its line: errors, and")
		fmt.Fprintln(w, "warnings for keys that have no effect and values that disable a safety.")
		fmt.Fprintln(w, "serve's flags and a worker command after -- are checked as sluice serve")
		fmt.Fprintln(w, "would take them; each flag is listed with the key it overrides (a flag")
		fmt.Fprintln(w, "wins over the file).")
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
	// Arguments are a worker command only after --: a bare one is most
	// likely the file, named without -c.
	if n := len(args) - fs.NArg(); fs.NArg() > 0 && (n == 0 || args[n-1] != "--") {
		fmt.Fprintf(stderr, "sluice validate: unexpected argument %q (name the file with -c)\n\n", fs.Arg(0))
		usage(stderr)
		return 2
	}
	if printDefaults != "" {
		if *path != "" || fs.NArg() > 0 || flags != (config.Flags{}) {
			fmt.Fprintln(stderr, "sluice validate: --print-defaults prints the built-in defaults; it takes no -c, flags or command")
			return 2
		}
		yaml := config.DefaultYAML()
		if printDefaults == "front" {
			yaml = config.DefaultFrontYAML()
		}
		if _, err := stdout.Write(yaml); err != nil {
			fmt.Fprintf(stderr, "sluice validate: %v\n", err)
			return 1
		}
		return 0
	}

	return validateFile(*path, config.Overrides{Command: fs.Args(), Flags: flags}, *strict, stdout, stderr)
}

// validateFile checks the file at path (as config.ResolveWith finds it)
// with o applied, and prints what runValidate says of it.
func validateFile(path string, o config.Overrides, strict bool, stdout, stderr io.Writer) int {
	loaded, err := config.ResolveWith(path, o)
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
	// As serve would find it: a misspelt program fails here, not in a
	// crash loop.
	if c, ok := app.WorkerCommand(loaded.Config, loaded.Source); ok {
		if err := c.Executable(); err != nil {
			fmt.Fprintf(stderr, "sluice validate: %v\n", err)
			return 1
		}
	}
	for _, w := range loaded.Warnings {
		fmt.Fprintln(stderr, w)
	}
	source := loaded.Source
	if source == "" {
		source = "built-in defaults"
	}
	for _, o := range loaded.Overridden {
		fmt.Fprintln(stdout, o)
	}
	switch n := len(loaded.Warnings); {
	case n > 0 && strict:
		fmt.Fprintf(stderr, "sluice validate: %s: %s (--strict)\n", source, plural(n, "warning"))
		return 1
	case n > 0:
		fmt.Fprintf(stdout, "ok: %s (%s)\n", source, plural(n, "warning"))
	default:
		fmt.Fprintf(stdout, "ok: %s\n", source)
	}
	return 0
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// defaultsFlag is --print-defaults: "" (not given), "all" (--print-defaults)
// or "front" (--print-defaults=front).
type defaultsFlag string

func (f *defaultsFlag) String() string   { return string(*f) }
func (f *defaultsFlag) IsBoolFlag() bool { return true }

func (f *defaultsFlag) Set(s string) error {
	switch s {
	case "true", "all":
		*f = "all"
	case "front":
		*f = "front"
	case "false":
		*f = ""
	default:
		return fmt.Errorf("%q is not all or front", s)
	}
	return nil
}
