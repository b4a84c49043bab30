package cli

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at link time (-ldflags
// "-X github.com/sluicehq/sluice/internal/cli.version=v1.2.3"); otherwise
// the module version from the build info is used.
var version = ""

func runVersion(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	v := version
	if v == "" {
		v = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			v = bi.Main.Version
		}
	}
	fmt.Fprintf(stdout, "sluice %s %s %s/%s\n", v, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return 0
}
