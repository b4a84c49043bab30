// Command sluice fronts HTTP services and the worker processes it supervises,
// keeping them fast and alive under more traffic than they can serve.
//
// The command itself is package internal/cli.
package main

import (
	"os"

	"github.com/sluicehq/sluice/internal/cli"
)

func main() { os.Exit(cli.Main(cli.Extensions{})) }
